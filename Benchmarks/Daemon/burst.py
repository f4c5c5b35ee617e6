#!/usr/bin/env python3
"""One burst, measured alone: the release netdevd (as load.py starts it, with no hook) watches --pairs veth pairs
made with one `ip -batch` (both ends raised) and deleted with another, and prints each burst's wall time and the
context switches and CPU of each of netdevd's threads, and netdevd's anonymous RSS before the bursts and 3 s and
11 s after the delete. Quicker than load.py (no starts, queries or metrics), for comparing builds or settings:

  Tests/Harness/in-netns.sh python3 Benchmarks/Daemon/burst.py --binary B --pairs 2500 [--monitors 10]
      [--perf FILE]  (a perf profile of the loop's thread over the delete burst, DWARF call graphs)
      [--tunables T] (GLIBC_TUNABLES for netdevd instead of the unit's)
      [--route-ipv6] (route the test links' IPv6 packets rather than drop them: see load.ipv6_ingress)
"""

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import load  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--pairs", type=int, default=2500)
    parser.add_argument("--monitors", type=int, default=0)
    parser.add_argument("--perf", help="perf profile of the loop's thread over the delete burst")
    parser.add_argument("--tunables", help="GLIBC_TUNABLES for netdevd")
    load.ipv6_ingress_option(parser)
    options = parser.parse_args()
    print(f"IPv6 packets entering the namespace: {load.ipv6_ingress(options.route_ipv6)}", flush=True)
    load.PAIRS = options.pairs
    if options.tunables is not None:
        load.UNIT_ENVIRONMENT["GLIBC_TUNABLES"] = options.tunables
    workdir, ctl, hooks_dir = load.work_directory(options.binary, "burst")
    open(os.path.join(workdir, "netdevd.conf"), "w").close()
    daemon = load.Daemon(options.binary, workdir, "main", hooks_dir)
    clients = []
    try:
        daemon.ready_seconds()
        time.sleep(1)
        clients = [load.MonitorClient(ctl, daemon.socket_path) for _ in range(options.monitors)]
        time.sleep(2)
        print(f"anonymous RSS idle (MiB): {load.proc_status(daemon.pid, 'RssAnon'):.2f}", flush=True)

        def measured(label, lines, count, profile=None):
            before, started = load.task_switches(daemon.pid), time.monotonic()
            subprocess.run(["ip", "-batch", "-"], input="".join(f"{line}\n" for line in lines), text=True, check=True)
            load.wait_for_links(ctl, daemon.socket_path, "nb", count, time.monotonic(), timeout=1800)
            time.sleep(3)
            after = load.task_switches(daemon.pid)
            print(f"{label}: wall {time.monotonic() - started:.1f} s; context switches / CPU by thread: "
                  + load.switches_by_thread(before, after, daemon.pid), flush=True)

        create = []
        for i in range(options.pairs):
            name = load.pair_name(i)
            create += [f"link add {name}a type veth peer name {name}b", f"link set {name}a up", f"link set {name}b up"]
        measured("create", create, 2 * options.pairs)
        time.sleep(3)
        profiler = None
        if options.perf:
            profiler = subprocess.Popen(
                ["perf", "record", "-q", "-e", "cpu-clock", "-F", "1000", "--call-graph", "dwarf,16384", "-t",
                 str(daemon.pid), "-o", options.perf], stdout=subprocess.DEVNULL)
            time.sleep(1)
        measured("delete", [f"link del {load.pair_name(i)}a" for i in range(options.pairs)], 0)
        print(f"anonymous RSS 3 s after the delete (MiB): {load.proc_status(daemon.pid, 'RssAnon'):.2f}", flush=True)
        time.sleep(8)
        print(f"anonymous RSS 11 s after the delete (MiB): {load.proc_status(daemon.pid, 'RssAnon'):.2f}", flush=True)
        if profiler:
            profiler.send_signal(2)
            profiler.wait()
    finally:
        for client in clients:
            client.stop()
        daemon.stop()
        subprocess.run(["ip", "-force", "-batch", "-"], input="".join(f"link del {load.pair_name(i)}a\n"
                       for i in range(options.pairs)), text=True, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
