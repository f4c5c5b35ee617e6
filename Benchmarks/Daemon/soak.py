#!/usr/bin/env python3
"""netdevd's soak: a day of link churn, compressed into --duration, checked for leaks, drift and lost monitors.

Runs inside Tests/Harness/in-netns.sh (a throw-away network namespace with a private udevd and journald); `make
soak DURATION=1h` builds the release binary and runs it there. It starts the release netdevd as load.py does (the
unit's `Environment=`, a control socket of its own, a hook in hooks.d appending a short line to a log the soak
empties at every check), then:

  - attaches a slow `netdevctl monitor --json=short` client, whose output is read a few lines a second, so that
    netdevd's bounded buffer for it fills and netdevd cuts it off with `io.netdevd.ClientTooSlow` (once netdevd's
    journal says so, the rest of its output is read to see how it ends);
  - creates 2,000 links (1,000 veth pairs, both ends up) with one `ip -batch`, waits until `netdevctl links` lists
    them all and the kernel has settled, then attaches 9 more monitors, which read continuously;
  - churns until --duration is up, from a seeded random generator: `ip -force -batch` batches of 20-50 commands
    (--batches-per-second, one every 2 s by default; veth pairs added and deleted around 2,000 links, links set up
    and down, renamed, IPv4 and IPv6 addresses added and deleted, routes and default routes added and deleted;
    netdevd runs the hook for each change);
  - every --check-every (a fifth of the duration below 50 minutes, so there are always 5, after a baseline check
    once the monitors are attached) pauses the churn, lets the kernel settle, and checks: netdevd's links and
    addresses against `ip -j link` / `ip -j addr` (no difference, within 30 s), each fast monitor's last state
    against `netdevctl links` (equal, once it has printed nothing new for 5 s; 2 minutes at most), and records
    netdevd's RSS, descriptors, threads and CPU (and its hook runner's descriptors and threads); one line per check
    is printed at once.

At the end it deletes every link it made, stops netdevd, prints the checks as a table and a verdict. PASS needs:
RSS, descriptors and threads at the last check within 5% of the first check after the baseline (descriptors and
threads within 1 when 5% is less); no drift at any check; no journal entry of netdevd's at priority warning or more
urgent but the slow monitor's cut-off; the slow monitor ended with ClientTooSlow and the 9 others ran to the end,
equal to `netdevctl links` at every check; netdevd still running. The exit status is 0 on PASS, 1 otherwise (each
failed condition named); --json FILE writes every figure.

The fast monitors follow links only (`--links-only`) and print each change as it comes (`--changes`), folding it
into the state they hold, as an operator's script on a large host would: whole-state lines (about 340 KB each at
2,000 links) cost netdevctl some 35 ms each, and 9 of them fell minutes behind a batch a second on 2 cores. The
slow monitor prints whole states, so that netdevd's buffer for it fills. The monitors attach once the first burst
has settled (udev done, link-local addresses past DAD).
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import load  # noqa: E402  (the load harness's helpers: Daemon, proc_stat, links, settle_drift, ...)

PAIRS = 1000
LINKS = 2 * PAIRS
FAST_MONITORS = 9
SETTLE_TIMEOUT = 30
CUT_OFF_ERROR = "io.netdevd.ClientTooSlow"


def parse_duration(text):
    """Seconds from "300s", "5m", "1h" or a bare number of seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (300s, 5m, 1h)")
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]


def minutes(seconds):
    """"1:05:00" or "5:00" for a number of seconds."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def ip_json(*arguments):
    """`ip -j ARGUMENTS`, decoded."""
    output = subprocess.run(["ip", "-j", *arguments], capture_output=True, text=True, check=True).stdout
    return json.loads(output) if output.strip() else []


def ip_batch(commands):
    """Runs `commands` with `ip -force -batch -` (a failed command does not stop the rest); returns how many
    failed."""
    result = subprocess.run(["ip", "-force", "-batch", "-"], input="".join(c + "\n" for c in commands),
                            capture_output=True, text=True)
    return result.stderr.count("Command failed")


def process_counts(pid):
    """(open descriptors, threads) of pid."""
    descriptors = len(os.listdir(f"/proc/{pid}/fd"))
    with open(f"/proc/{pid}/status") as f:
        threads = next(int(line.split()[1]) for line in f if line.startswith("Threads:"))
    return descriptors, threads


def hook_runner_pid(pid):
    """The pid of netdevd's hook runner (its child `netdevd --serve-hooks`), or None."""
    return next(iter(load.hook_runner_pids(pid)), None)


def link_key(link):
    """What a monitor's state and ListLinks must agree on for one link."""
    return link["index"], link["name"], link["operationalState"], tuple(sorted(link["addresses"]))


def state_from_line(line):
    """The monitor's state (a list of links) from one line of `netdevctl monitor --json=short`, which prints the
    whole state after each change, so the last line is all that matters (the slow monitor)."""
    return json.loads(line)["links"]


def fold_line(links, line):
    """`links` (index to link) after one line of `netdevctl monitor --json=short --changes`: the first line is
    `{"state": ...}`, each later one `{"change": ...}` (the fast monitors: what an operator's script would do)."""
    reply = json.loads(line)
    if "state" in reply:
        return {link["index"]: link for link in reply["state"]["links"]}
    change = reply["change"]
    for index in change.get("removedLinks", []):
        links.pop(index, None)
    for link in change.get("links", []):
        links[link["index"]] = link
    return links


class MonitorReader:
    """One `netdevctl monitor --json=short` client and the thread reading its output: fast ones read every line as
    it comes and keep the last; the slow one reads a line every `slow_every` seconds until `cut_off` is set (netdevd
    said it cut it off), then the rest, to see how it ends."""

    def __init__(self, ctl, socket_path, number, slow_every=None, slow_lines=5):
        self.number = number
        self.slow_every = slow_every
        self.slow_lines = slow_lines
        self.cut_off = threading.Event()
        arguments = [ctl, "--socket", socket_path, "monitor", "--json=short", "--links-only"]
        if slow_every:
            arguments.append("lo")
        else:
            arguments.append("--changes")
        self.process = subprocess.Popen(arguments, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE)
        self.pid = self.process.pid
        self.lock = threading.Lock()
        self.last_line = None
        self.links = None
        self.lines = 0
        self.bytes = 0
        self.stderr = ""
        self.ended = None
        self.stopped = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        if self.slow_every:
            self._read_slowly()
        else:
            for line in self.process.stdout:
                with self.lock:
                    self.last_line = line
                    self.links = fold_line(self.links or {}, line)
                    self.lines += 1
                    self.bytes += len(line)
        self.stderr = self.process.stderr.read().decode(errors="replace").strip()
        self.process.wait()
        self.ended = time.monotonic()

    def _read_slowly(self):
        """`slow_lines` lines every `slow_every` seconds: netdevctl prints a line for each reply it takes and reads
        the socket again only once it has used up what it read (64 KiB), so netdevd's buffer grows, yet the socket is
        read often enough (netdevd closes a connection it cannot write to for 60 s, without the error). Once cut off,
        everything, as fast as it comes."""
        stream = self.process.stdout
        while True:
            if not self.cut_off.is_set():
                self.cut_off.wait(self.slow_every)
            for _ in range(1 if self.cut_off.is_set() else self.slow_lines):
                line = stream.readline()
                if not line:
                    return
                with self.lock:
                    self.last_line = line
                    self.lines += 1
                    self.bytes += len(line)

    def alive(self):
        return self.process.poll() is None

    def state(self):
        """The links of the last state printed, or None before the first."""
        with self.lock:
            if not self.slow_every:
                return None if self.links is None else list(self.links.values())
            line = self.last_line
        return None if line is None else state_from_line(line)

    def outcome(self):
        """How it ended, in words: "running", "ClientTooSlow (exit 1)", or the status and stderr."""
        if self.alive() or self.ended is None:
            return "running"
        if self.stopped:
            return "ran to the end (stopped by the soak)"
        status = self.process.returncode
        if CUT_OFF_ERROR in self.stderr:
            return f"cut off with ClientTooSlow (exit {status})"
        return f"ended (exit {status}): {self.stderr[-300:] or 'no message'}"

    def stop(self):
        self.stopped = self.alive()
        if self.stopped:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.thread.join(timeout=10)


class Churn:
    """The random link operations and what the soak believes the namespace holds (re-read from the kernel after
    every few batches and before each check, since failed commands and the kernel's own changes, such as IPv6
    addresses flushed on link down, make it wrong)."""

    def __init__(self, seed, target=LINKS):
        self.random = random.Random(seed)
        self.target = target
        self.next_pair = PAIRS
        self.next_rename = 0
        self.links = {}         # name -> {"peer": name, "up": bool, "addresses": set}
        self.routes = {}        # 198.18.N.0/24 -> device
        self.defaults = {}      # (gateway, metric) -> device
        self.operations = 0
        self.failed = 0
        self.batches = 0

    def initial(self, pairs=PAIRS):
        """The commands creating the first `pairs` veth pairs, both ends up."""
        commands = []
        for n in range(pairs):
            a, b = f"sk{n}a", f"sk{n}b"
            commands += [f"link add {a} type veth peer name {b}", f"link set {a} up", f"link set {b} up"]
        return commands

    def resync(self):
        """Re-reads links, addresses and routes from the kernel."""
        links = {}
        for entry in ip_json("addr"):
            if entry["ifname"] == "lo":
                continue
            links[entry["ifname"]] = {
                "peer": entry.get("link"), "up": "UP" in entry.get("flags", []),
                "addresses": {f"{a['local']}/{a['prefixlen']}" for a in entry.get("addr_info", [])
                              if not a["local"].startswith("fe80:")},
            }
        self.links = links
        self.routes, self.defaults = {}, {}
        for route in ip_json("route", "show", "table", "main"):
            device = route.get("dev")
            if device not in links:
                continue
            if route["dst"] == "default" and "gateway" in route:
                self.defaults[(route["gateway"], route.get("metric", 0))] = device
            elif route["dst"].startswith("198.1"):
                self.routes[route["dst"]] = device

    def _pick(self, condition=None):
        names = [n for n, link in self.links.items() if condition is None or condition(link)]
        return self.random.choice(names) if names else None

    def _forget(self, name):
        self.links.pop(name, None)
        self.routes = {p: d for p, d in self.routes.items() if d != name}
        self.defaults = {k: d for k, d in self.defaults.items() if d != name}

    def _pair(self, commands):
        """Adds a pair below the target, deletes one above it, with some randomness either way."""
        lean = min(0.95, max(0.05, 0.5 + (self.target - len(self.links)) / 40))
        if self.random.random() < lean:
            n = self.next_pair
            self.next_pair += 1
            a, b = f"sk{n}a", f"sk{n}b"
            commands += [f"link add {a} type veth peer name {b}", f"link set {a} up", f"link set {b} up"]
            self.links[a] = {"peer": b, "up": True, "addresses": set()}
            self.links[b] = {"peer": a, "up": True, "addresses": set()}
        else:
            name = self._pick()
            if name is None:
                return
            commands.append(f"link del {name}")
            peer = self.links[name]["peer"]
            self._forget(name)
            if peer:
                self._forget(peer)

    def _up_down(self, commands):
        name = self._pick()
        if name is None:
            return
        link = self.links[name]
        link["up"] = not link["up"]
        commands.append(f"link set {name} {'up' if link['up'] else 'down'}")

    def _rename(self, commands):
        name = self._pick()
        if name is None:
            return
        new = f"rn{self.next_rename}"
        self.next_rename += 1
        commands += [f"link set {name} down", f"link set {name} name {new}"]
        link = self.links.pop(name)
        link["up"] = False
        self.links[new] = link
        if link["peer"] in self.links:
            self.links[link["peer"]]["peer"] = new
        self.routes = {p: (new if d == name else d) for p, d in self.routes.items()}
        self.defaults = {k: (new if d == name else d) for k, d in self.defaults.items()}

    def _address_add(self, commands):
        name = self._pick()
        if name is None:
            return
        r = self.random
        if r.random() < 0.6:
            address = f"10.{r.randrange(256)}.{r.randrange(256)}.{r.randrange(2, 255)}/24"
        else:
            address = f"fd00:{r.randrange(1, 65536):x}:{r.randrange(65536):x}::{r.randrange(1, 65536):x}/64"
        commands.append(f"addr add {address} dev {name}")
        self.links[name]["addresses"].add(address)

    def _address_delete(self, commands):
        name = self._pick(lambda link: link["addresses"])
        if name is None:
            return
        address = self.random.choice(sorted(self.links[name]["addresses"]))
        commands.append(f"addr del {address} dev {name}")
        self.links[name]["addresses"].discard(address)

    def _route(self, commands):
        if self.routes and (len(self.routes) > 200 or self.random.random() < 0.45):
            prefix = self.random.choice(sorted(self.routes))
            commands.append(f"route del {prefix} dev {self.routes.pop(prefix)}")
            return
        name = self._pick(lambda link: link["up"])
        if name is None:
            return
        n = self.random.randrange(512)
        prefix = f"198.{18 + n // 256}.{n % 256}.0/24"
        if prefix in self.routes:
            return
        commands.append(f"route add {prefix} dev {name}")
        self.routes[prefix] = name

    def _default_route(self, commands):
        if self.defaults and (len(self.defaults) >= 8 or self.random.random() < 0.5):
            key = self.random.choice(sorted(self.defaults))
            gateway, metric = key
            commands.append(f"route del default via {gateway} dev {self.defaults.pop(key)} metric {metric}")
            return
        name = self._pick(lambda link: link["up"] and any(a.startswith("10.") for a in link["addresses"]))
        if name is None:
            return
        address = self.random.choice(sorted(a for a in self.links[name]["addresses"] if a.startswith("10.")))
        gateway = address.rsplit(".", 1)[0] + ".1"
        metric = self.random.randrange(100, 1000)
        if (gateway, metric) in self.defaults:
            return
        commands.append(f"route add default via {gateway} dev {name} metric {metric}")
        self.defaults[(gateway, metric)] = name

    def batch(self):
        """One batch of 20-50 commands, chosen by weight."""
        kinds = [(self._up_down, 30), (self._address_add, 20), (self._address_delete, 15), (self._rename, 8),
                 (self._pair, 12), (self._route, 10), (self._default_route, 3)]
        operations, weights = zip(*kinds)
        size = self.random.randint(20, 50)
        commands = []
        while len(commands) < size:
            self.random.choices(operations, weights)[0](commands)
        return commands

    def run_batch(self):
        commands = self.batch()
        self.failed += ip_batch(commands)
        self.operations += len(commands)
        self.batches += 1
        if self.batches % 10 == 0:
            self.resync()

    def delete_everything(self):
        """Deletes every link but lo (the namespace is the soak's own); the routes go with them."""
        names = [entry["ifname"] for entry in ip_json("link") if entry["ifname"] != "lo"]
        ip_batch([f"link del {name}" for name in names])


class Soak:
    """The running soak: netdevd, its monitors, the churn and the checks."""

    def __init__(self, options, workdir):
        self.options = options
        self.workdir = workdir
        self.ctl = os.path.join(workdir, "netdevctl")
        self.hook_log = os.path.join(workdir, "hooks.log")
        self.daemon = None
        self.monitors = []
        self.slow = None
        self.churn = Churn(options.seed)
        self.checks = []
        self.hook_runs = 0
        self.churn_seconds = 0.0
        self.started = time.monotonic()

    def start(self):
        binary = os.path.realpath(self.options.binary)
        os.symlink(binary, self.ctl)
        hooks_dir = os.path.join(self.workdir, "hooks.d")
        os.makedirs(hooks_dir)
        os.chmod(self.workdir, 0o755)
        open(self.hook_log, "w").close()
        hook = os.path.join(hooks_dir, "50-log")
        with open(hook, "w") as f:
            f.write(f'#!/bin/sh\necho "$1 $2 $NETDEVD_OPER_STATE" >>{self.hook_log}\n')
        os.chmod(hook, 0o755)
        self.daemon = load.Daemon(binary, self.workdir, "main", hooks_dir)
        ready = self.daemon.ready_seconds()
        say(f"netdevd {self.daemon.pid} ready in {ready * 1000:.0f} ms; seed {self.options.seed}")

    @property
    def socket_path(self):
        return self.daemon.socket_path

    def create_links(self):
        started = time.monotonic()
        failed = ip_batch(self.churn.initial())
        if failed:
            raise RuntimeError(f"{failed} commands of the first ip -batch failed")
        listed, _ = load.wait_for_links(self.ctl, self.socket_path, "sk", LINKS, started, timeout=300)
        self.churn.resync()
        say(f"{LINKS:,} links created; netdevctl links lists them all {listed:.1f} s after ip -batch started")
        # The monitors attach once the burst is over (udev done, every link-local address past DAD and known to
        # netdevd): its 4,000-odd changes would otherwise reach them as a flood no whole-state reader keeps up with.
        subprocess.run(["udevadm", "settle", "-t", "120"], check=False)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and any(
                a.get("tentative") for entry in ip_json("addr") for a in entry.get("addr_info", [])):
            self.watch_slow_monitor()
            time.sleep(1)
        problems = load.settle_drift(self.ctl, self.socket_path, timeout=60)
        self.watch_slow_monitor()
        say(f"settled {time.monotonic() - started:.1f} s after ip -batch started (drift {len(problems)})")

    def attach_slow_monitor(self):
        """The slow monitor attaches before the first burst: the burst's changes (some 4,000 links and devices
        added, raised, given link-local addresses) are more than netdevd's 4 MiB per connection, which the churn's
        pace, set by what the fast monitors keep up with, would take a quarter of an hour to fill."""
        self.slow = MonitorReader(self.ctl, self.socket_path, 0, slow_every=self.options.slow_read_every,
                                  slow_lines=self.options.slow_read_lines)
        self.wait_for_first_states([self.slow])
        say(f"the slow monitor attached (netdevctl pid {self.slow.pid}, reading {self.options.slow_read_lines} "
            f"lines every {self.options.slow_read_every:g} s until netdevd cuts it off)")

    def attach_monitors(self):
        self.monitors = [MonitorReader(self.ctl, self.socket_path, n) for n in range(1, FAST_MONITORS + 1)]
        self.wait_for_first_states(self.monitors)
        say(f"{FAST_MONITORS} monitors attached, reading continuously")

    def wait_for_first_states(self, monitors, timeout=60):
        deadline = time.monotonic() + timeout
        while any(m.last_line is None for m in monitors):
            if time.monotonic() > deadline:
                raise RuntimeError(f"a monitor printed no state within {timeout} s")
            if any(not m.alive() for m in monitors):
                raise RuntimeError("a monitor ended before its first state: "
                                   + "; ".join(m.outcome() for m in monitors if not m.alive()))
            time.sleep(0.1)

    def watch_slow_monitor(self):
        """Once netdevd's journal says it cut the slow monitor off, its reader reads the rest at once."""
        if self.slow and not self.slow.cut_off.is_set() and self.cut_off_entries():
            self.slow.cut_off.set()

    def journal(self, priority="warning"):
        """netdevd's journal entries at `priority` or more urgent: [(PRIORITY, MESSAGE)]."""
        output = subprocess.run(
            ["journalctl", "--no-pager", f"_PID={self.daemon.pid}", "-p", priority, "-o", "json",
             "--output-fields=MESSAGE,PRIORITY"], capture_output=True, text=True).stdout
        entries = []
        for line in output.splitlines():
            entry = json.loads(line)
            message = entry.get("MESSAGE", "")
            if isinstance(message, list):   # journalctl gives bytes it cannot show as text as a list of numbers
                message = bytes(message).decode(errors="replace")
            entries.append((entry.get("PRIORITY", "?"), message))
        return entries

    def is_cut_off_entry(self, message):
        """netdevd's line for cutting the slow monitor off (Sources/Varlink/Connection.swift, kind "slow"):
        "Closed the control connection of pid N (uid 0): it left more than B bytes of replies unread
        (io.netdevd.ClientTooSlow)"."""
        return (self.slow is not None and message.startswith(f"Closed the control connection of pid {self.slow.pid} ")
                and f"({CUT_OFF_ERROR})" in message)

    def cut_off_entries(self):
        return [m for _, m in self.journal() if self.is_cut_off_entry(m)]

    def monitors_against_links(self, quiet=5, limit=120):
        """Polls until every fast monitor's last state equals `netdevctl links` (index, name, operational state,
        addresses); returns the monitors that differ, with what differs. A monitor that differs while it still
        prints (behind, on a busy machine: each state costs netdevctl tens of milliseconds) is waited for; one that
        has printed nothing for `quiet` seconds, or any after `limit` seconds, is reported."""
        began = time.monotonic()
        printed = {}    # monitor number -> (lines read, when that count was first seen)
        while True:
            ours = {link_key(link) for link in load.links(self.ctl, self.socket_path)}
            now = time.monotonic()
            differing, waiting = [], False
            for monitor in self.monitors:
                if printed.get(monitor.number, (None,))[0] != monitor.lines:
                    printed[monitor.number] = (monitor.lines, now)
                state = monitor.state() if monitor.alive() else None
                if state is None:
                    differing.append(f"monitor {monitor.number}: {monitor.outcome()}")
                    continue
                theirs = {link_key(link) for link in state}
                if theirs != ours:
                    only_monitor, only_list = sorted(theirs - ours)[:2], sorted(ours - theirs)[:2]
                    differing.append(f"monitor {monitor.number}: {len(theirs ^ ours)} links differ "
                                     f"(monitor only: {only_monitor}; ListLinks only: {only_list})")
                    waiting |= now - printed[monitor.number][1] < quiet
            if not differing or not waiting or now - began > limit:
                return differing
            time.sleep(1)

    def check(self, label):
        """Pauses (the churn runs in this thread), settles, checks, records and prints one line."""
        began = time.monotonic()
        self.churn.resync()
        subprocess.run(["udevadm", "settle", "-t", "30"], check=False)
        time.sleep(1)
        problems = load.settle_drift(self.ctl, self.socket_path, timeout=SETTLE_TIMEOUT, tentative=False)
        tentative = sum(1 for entry in ip_json("addr") for a in entry.get("addr_info", []) if a.get("tentative"))
        for problem in problems[:10]:
            print(f"  drift: {problem}", file=sys.stderr)
        differing = self.monitors_against_links()
        for line in differing[:10]:
            print(f"  monitor: {line}", file=sys.stderr)
        self.watch_slow_monitor()
        pid = self.daemon.pid
        running = self.daemon.process.poll() is None
        cpu = load.proc_stat(pid)[0] if running else None
        descriptors, threads = process_counts(pid) if running else (None, None)
        runner = hook_runner_pid(pid) if running else None
        runner_descriptors, runner_threads = process_counts(runner) if runner else (None, None)
        with open(self.hook_log) as f:
            self.hook_runs += sum(1 for _ in f)
        os.truncate(self.hook_log, 0)
        figures = {
            "check": label,
            "elapsed (s)": round(time.monotonic() - self.started),
            "churn (s)": round(self.churn_seconds),
            "links": sum(1 for entry in ip_json("link") if entry["ifname"] != "lo"),
            "operations": self.churn.operations,
            "failed operations": self.churn.failed,
            "batches": self.churn.batches,
            "RSS (MiB)": round(load.proc_status(pid, "VmRSS"), 1) if running else None,
            "descriptors": descriptors,
            "threads": threads,
            "CPU (s)": round(cpu, 1) if cpu is not None else None,
            "hook runner descriptors": runner_descriptors,
            "hook runner threads": runner_threads,
            "hook runs so far": self.hook_runs,
            "drift": len(problems),
            "drift problems": problems[:20],
            "tentative addresses (left out of the drift)": tentative,
            "fast monitors alive": sum(1 for m in self.monitors if m.alive()),
            "fast monitors differing from ListLinks": differing,
            "monitor lines read": sum(m.lines for m in self.monitors),
            "monitor MB read": round(sum(m.bytes for m in self.monitors) / 1e6, 1),
            "slow monitor": self.slow.outcome(),
            "netdevd running": running,
            "check took (s)": round(time.monotonic() - began, 1),
        }
        self.checks.append(figures)
        slow = "running" if self.slow.alive() else ("ClientTooSlow" if CUT_OFF_ERROR in self.slow.stderr
                                                     else "ended")
        say(f"check {label}: elapsed {minutes(figures['elapsed (s)'])}, churn {minutes(self.churn_seconds)}, "
            f"{figures['links']:,} links, {self.churn.operations:,} operations ({self.churn.failed:,} failed), "
            f"RSS {figures['RSS (MiB)']} MiB, {descriptors} fds, {threads} threads, CPU {figures['CPU (s)']} s, "
            f"runner {runner_descriptors} fds / {runner_threads} threads, drift {len(problems)}, monitors "
            f"{figures['fast monitors alive']}/{FAST_MONITORS} alive, {len(differing)} differing, slow: {slow}, "
            f"check took {figures['check took (s)']} s")

    def run(self):
        duration = self.options.duration
        interval = self.options.check_every if duration >= 50 * 60 else duration / 5
        rate = self.options.batches_per_second
        self.check("0 (baseline)")
        number = 1
        last_watch = time.monotonic()
        while self.churn_seconds < duration - 1e-6:
            slice_end = min(number * interval, duration)
            began = time.monotonic()
            next_batch = began
            while self.churn_seconds + (time.monotonic() - began) < slice_end:
                self.churn.run_batch()
                if time.monotonic() - last_watch > 5:
                    self.watch_slow_monitor()
                    last_watch = time.monotonic()
                next_batch += 1 / rate
                now = time.monotonic()
                if next_batch > now:
                    time.sleep(min(next_batch - now, max(0.0, slice_end - self.churn_seconds - (now - began))))
                else:
                    next_batch = now
            self.churn_seconds += time.monotonic() - began
            self.check(str(number))
            number += 1

    def finish_slow_monitor(self, timeout=120):
        """Gives the slow monitor, once cut off, the time to read what is left and end."""
        self.watch_slow_monitor()
        if not self.slow.cut_off.is_set():
            return
        deadline = time.monotonic() + timeout
        while self.slow.alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        self.slow.thread.join(timeout=max(0, deadline - time.monotonic()))

    def verdict(self):
        """The failed conditions (none: PASS), each in words."""
        failures = []
        reference = self.checks[1] if len(self.checks) > 1 else None
        last = self.checks[-1]
        if reference is None:
            failures.append("(a) no check after the first interval of churn to compare against")
        else:
            for key, absolute in (("RSS (MiB)", 0), ("descriptors", 1), ("threads", 1)):
                first, final = reference[key], last[key]
                if first is None or final is None:
                    failures.append(f"(a) {key}: not measured (netdevd not running)")
                    continue
                allowed = max(first * 0.05, absolute)
                if abs(final - first) > allowed:
                    failures.append(f"(a) {key}: {final} at the last check against {first} at check 1 "
                                    f"(allowed ±{allowed:g})")
        drifted = [c["check"] for c in self.checks if c["drift"]]
        if drifted:
            failures.append(f"(b) drift at checks {', '.join(drifted)}")
        unexpected = [(p, m) for p, m in self.journal_entries if not self.is_cut_off_entry(m)]
        if unexpected:
            failures.append(f"(c) {len(unexpected)} journal entries at warning or above, e.g. "
                            + "; ".join(f"[{p}] {m}" for p, m in unexpected[:3]))
        if CUT_OFF_ERROR not in self.slow.stderr:
            failures.append(f"(d) the slow monitor did not end with ClientTooSlow: {self.slow.outcome()}")
        differing = [c["check"] for c in self.checks if c["fast monitors differing from ListLinks"]]
        if differing:
            failures.append(f"(d) fast monitors not alive or not equal to ListLinks at checks {', '.join(differing)}")
        if not self.daemon_running_at_end:
            failures.append(f"(e) netdevd was not running at the end (status {self.daemon.process.returncode})")
        return failures


def interrupted(number, frame):
    raise KeyboardInterrupt


def say(line):
    print(line, flush=True)


def print_table(checks):
    columns = [("check", "check", "{}"), ("elapsed", "elapsed (s)", "minutes"), ("links", "links", "{:,}"),
               ("operations", "operations", "{:,}"), ("RSS MiB", "RSS (MiB)", "{}"), ("fds", "descriptors", "{}"),
               ("threads", "threads", "{}"), ("CPU s", "CPU (s)", "{}"),
               ("runner fds/thr", None, None), ("hook runs", "hook runs so far", "{:,}"), ("drift", "drift", "{}"),
               ("monitors alive/equal", None, None), ("slow monitor", "slow monitor", "{}")]
    rows = []
    for check in checks:
        row = []
        for title, key, style in columns:
            if title == "runner fds/thr":
                row.append(f"{check['hook runner descriptors']}/{check['hook runner threads']}")
            elif title == "monitors alive/equal":
                equal = FAST_MONITORS - len(check["fast monitors differing from ListLinks"])
                row.append(f"{check['fast monitors alive']}/{equal}")
            elif style == "minutes":
                row.append(minutes(check[key]))
            elif check[key] is None:
                row.append("-")
            else:
                row.append(style.format(check[key]))
        rows.append(row)
    widths = [max(len(title), *(len(row[i]) for row in rows)) for i, (title, _, _) in enumerate(columns)]
    print("  ".join(title.rjust(width) if i else title.ljust(width)
                    for i, ((title, _, _), width) in enumerate(zip(columns, widths))))
    for row in rows:
        print("  ".join(cell.rjust(width) if i else cell.ljust(width)
                        for i, (cell, width) in enumerate(zip(row, widths))))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True, help="the release netdevd")
    parser.add_argument("--duration", type=parse_duration, default=parse_duration("1h"),
                        help="how long to churn: 300s, 5m, 1h (default 1h)")
    parser.add_argument("--check-every", type=parse_duration, default=parse_duration("10m"),
                        help="the check interval (default 10m; a fifth of --duration when that is below 50m)")
    parser.add_argument("--seed", type=int, default=20240601, help="the churn's random seed")
    parser.add_argument("--batches-per-second", type=float, default=0.5,
                        help="ip -batch runs a second (each of 20-50 commands)")
    parser.add_argument("--slow-read-every", type=float, default=1,
                        help="seconds between the slow monitor's reads, until it is cut off")
    parser.add_argument("--slow-read-lines", type=int, default=5,
                        help="lines of output the slow monitor reads each time, until it is cut off")
    parser.add_argument("--json", help="also write every figure here")
    parser.add_argument("--tally", default=os.environ.get("SOAK_TALLY"),
                        help="also write the verdict line here, for CI's summary (default: $SOAK_TALLY)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    options = parser.parse_args()

    if not os.environ.get("NETDEVD_TEST_HARNESS"):
        sys.exit("soak.py runs inside Tests/Harness/in-netns.sh (make soak)")

    # The harness stops this process with SIGTERM: the clean-up below still runs.
    signal.signal(signal.SIGTERM, interrupted)
    workdir = tempfile.mkdtemp(prefix="netdevd-soak-", dir="/run")
    soak = Soak(options, workdir)
    soak.daemon_running_at_end = False
    soak.journal_entries = []
    error = None
    say(f"soak: {minutes(options.duration)} of churn over {LINKS:,} links, seed {options.seed}")
    try:
        soak.start()
        soak.attach_slow_monitor()
        soak.create_links()
        soak.attach_monitors()
        soak.run()
        soak.finish_slow_monitor()
    except Exception as problem:  # reported below, after the clean-up, as a failed run
        error = f"{type(problem).__name__}: {problem}"
        print(f"soak stopped: {error}", file=sys.stderr)
    except KeyboardInterrupt:
        error = "interrupted"
    finally:
        for monitor in soak.monitors + ([soak.slow] if soak.slow else []):
            monitor.stop()
        if soak.daemon:
            soak.daemon_running_at_end = soak.daemon.process.poll() is None
            if not soak.daemon_running_at_end:
                print(f"netdevd exited early with status {soak.daemon.process.returncode}", file=sys.stderr)
            time.sleep(1)   # journald writes what netdevd said last
            soak.journal_entries = soak.journal()
            soak.daemon.stop()
        soak.churn.delete_everything()
        if not options.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    print()
    if soak.checks:
        print_table(soak.checks)
    failures = soak.verdict() if soak.checks and soak.slow else []
    if error:
        failures.insert(0, f"the soak did not run to the end: {error}")
    print()
    for index, monitor in enumerate([soak.slow] + soak.monitors if soak.slow else []):
        label = "slow monitor" if index == 0 else f"monitor {monitor.number}"
        print(f"{label} (netdevctl pid {monitor.pid}): {monitor.outcome()}, {monitor.lines:,} lines read")
    for priority, message in soak.journal_entries:
        print(f"netdevd journal, priority {priority}: {message}")
    ended = soak.checks[-1] if soak.checks else {}
    summary = (f"over {options.duration / 60:g} min, {LINKS:,} links, {ended.get('operations', 0):,} operations, "
               f"{len(soak.checks)} checks")
    if failures:
        print(f"verdict: FAIL {summary}")
        for failure in failures:
            print(f"  {failure}")
    else:
        print(f"verdict: PASS {summary}")
    if options.tally:
        with open(options.tally, "w") as f:
            f.write(f"FAILED {summary}: {'; '.join(failures)}\n" if failures else f"PASS {summary}\n")
    if options.json:
        with open(options.json, "w") as f:
            json.dump({
                "seed": options.seed, "duration (s)": options.duration, "links": LINKS,
                "batches per second": options.batches_per_second, "checks": soak.checks,
                "monitors": [{"number": m.number, "pid": m.pid, "slow": bool(m.slow_every), "outcome": m.outcome(),
                              "lines": m.lines, "bytes": m.bytes, "stderr": m.stderr}
                             for m in ([soak.slow] if soak.slow else []) + soak.monitors],
                "journal at warning or above": [{"priority": p, "message": m} for p, m in soak.journal_entries],
                "verdict": "FAIL" if failures else "PASS", "failures": failures,
            }, f, indent=2)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
