#!/usr/bin/env python3
"""What netdevd's CPU per kernel message is when the messages trickle in: N veth pairs made one `ip link add` at a
time (about 1,000 messages a second here; the kernel sends some 500 a second with 20,000 links present), against
the load harness's one `ip -batch` (several thousand a second at 1,000 links).

Prints netdevd's CPU per message, the messages per wake-up of its loop's thread and that thread's CPU per wake-up,
and each thread's context switches and CPU. With --present P, P veth pairs are made (one `ip -batch`) before netdevd
starts, so that the same messages are measured on a larger host; with --monitors N, as many `netdevctl monitor
--json=short --changes` clients are attached throughout (as load.py's); with --perf FILE, a perf profile (cpu-clock)
of netdevd over the pairs' creation. Runs inside Tests/Harness/in-netns.sh, like load.py (`make benchmark-paced`).
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

import load


def measure(daemon, ctl, interval, phase, commands):
    """Runs `commands` one at a time, `interval` ms apart, and returns netdevd's figures over them."""
    events = load.events_taken(ctl, daemon.socket_path)
    switches = load.task_switches(daemon.pid)
    cpu = load.proc_stat(daemon.pid)[0]
    began = time.monotonic()
    for command in commands:
        subprocess.run(command, check=True)
        if interval:
            time.sleep(interval / 1000)
    made = time.monotonic() - began
    # The last messages read and taken, and the device source's timers run out.
    time.sleep(2)
    cpu = load.proc_stat(daemon.pid)[0] - cpu
    after = load.task_switches(daemon.pid)
    events = load.events_taken(ctl, daemon.socket_path) - events
    main_tid = str(daemon.pid)
    woken = after[main_tid][1] - switches[main_tid][1]
    spent = after[main_tid][2] - switches[main_tid][2]
    return {
        f"{phase}: one ip each (s)": round(made, 1),
        f"{phase}: events netdevd's loop took": events,
        f"{phase}: events a second": round(events / made),
        f"{phase}: netdevd CPU (s)": round(cpu, 2),
        f"{phase}: netdevd CPU per event (µs)": round(cpu * 1e6 / max(events, 1), 1),
        f"{phase}: events per wake-up of the main thread / its CPU per wake-up (µs)":
            f"{events / max(woken, 1):.2f} / {spent * 1e6 / max(woken, 1):.0f}",
        f"{phase}: context switches / CPU by thread": load.switches_by_thread(switches, after, daemon.pid),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True, help="the release netdevd")
    parser.add_argument("--pairs", type=int, default=300, help="veth pairs, each made by an `ip` of its own")
    parser.add_argument("--interval", type=float, default=0,
                        help="milliseconds to wait after each `ip`, to send at the pace of a larger host")
    parser.add_argument("--delete", action="store_true",
                        help="also delete the pairs one `ip link del` at a time, and measure that apart")
    parser.add_argument("--present", type=int, default=0, help="veth pairs made before netdevd starts")
    parser.add_argument("--monitors", type=int, default=0, help="netdevctl monitor clients attached throughout")
    parser.add_argument("--perf", help="record a perf profile (cpu-clock) of netdevd into this file")
    load.ipv6_ingress_option(parser)
    options = parser.parse_args()
    if not os.environ.get("NETDEVD_TEST_HARNESS"):
        sys.exit("paced.py runs inside Tests/Harness/in-netns.sh (make benchmark-paced)")
    print(f"IPv6 packets entering the namespace: {load.ipv6_ingress(options.route_ipv6)}", flush=True)

    binary = os.path.realpath(options.binary)
    workdir, ctl, hooks = load.work_directory(binary, "paced")
    open(os.path.join(workdir, "netdevd.conf"), "w").close()
    present = "".join(f"link add pp{i}a type veth peer name pp{i}b\n" for i in range(options.present))
    if present:
        began = time.monotonic()
        subprocess.run(["ip", "-batch", "-"], input=present, text=True, check=True)
        print(f"{options.present} pairs present, made in {time.monotonic() - began:.1f} s", flush=True)
    daemon = load.Daemon(binary, workdir, "main", hooks)
    profiler = None
    monitors = []
    try:
        daemon.ready_seconds()
        monitors = [load.MonitorClient(ctl, daemon.socket_path) for _ in range(options.monitors)]
        time.sleep(1)
        if options.perf:
            profiler = subprocess.Popen(
                ["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000", "-g", "-p", str(daemon.pid),
                 "-o", options.perf], stdout=subprocess.DEVNULL)
            time.sleep(0.5)
        figures = measure(daemon, ctl, options.interval, "create", [
            ["ip", "link", "add", f"pc{i}a", "type", "veth", "peer", "name", f"pc{i}b"]
            for i in range(options.pairs)])
        if options.delete:
            figures |= measure(daemon, ctl, options.interval, "delete", [
                ["ip", "link", "del", f"pc{i}a"] for i in range(options.pairs)])
    finally:
        if profiler:
            profiler.send_signal(signal.SIGINT)
            profiler.wait()
        for monitor in monitors:
            monitor.stop()
        daemon.stop()
        subprocess.run(["ip", "-batch", "-"], input="".join(f"link del pc{i}a\n" for i in range(options.pairs))
                       + "".join(f"link del pp{i}a\n" for i in range(options.present)),
                       text=True, capture_output=True)
        shutil.rmtree(workdir, ignore_errors=True)
    width = max(len(name) for name in figures)
    for name, value in figures.items():
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
