#!/usr/bin/env python3
"""netdevd's load harness: a veth-pair burst (500 pairs, or --links), measured from outside, as an operator would.

Runs inside Tests/Harness/in-netns.sh (a throw-away network namespace with a private udevd and journald); `make
benchmark-daemon` builds the release binary and runs it there. It starts the release netdevd with a trivial hook,
creates --links / 2 veth pairs (1,000 links by default; `make benchmark-daemon LINKS=20000` for 20,000) with one
`ip -batch` (both ends raised), deletes them with another, and prints:

  - netdevd's own CPU (utime+stime from /proc/PID/stat), its hook runner's (the child that starts hooks), and the
    hooks' (cutime+cstime of netdevd and the runner) per burst; netdevd's CPU per event its loop took
    (`netdevd_events_total`: the kernel's and udev's messages) and per link, and the events per wake-up of its
    loop's thread with that thread's CPU per wake-up (--perf FILE: a perf profile of each burst, FILE-create and
    FILE-delete);
  - with --monitors N, N `netdevctl monitor --json=short --changes` clients attached through the bursts, each
    rebuilding the state from what it receives, compared with netdevd's links at the end of each burst;
  - with --list-rate R, 100 more pairs made while a client calls ListLinks R times a second; with --stuck-monitor,
    a monitor that stops reading while every link goes down and up, until netdevd cuts it off (ClientTooSlow);
  - RSS idle, at the burst's links, after the delete, and the peak (VmHWM, and VmRSS sampled every 20 ms); beside each
    RSS, PSS, the private part (USS) and its dirty pages from /proc/PID/smaps_rollup;
  - the time from `ip -batch` returning until `netdevctl links` lists all the burst's links (and then none);
  - drift: netdevd's links and addresses against `ip -j link` and `ip -j addr` at the end of each phase (IPv6
    addresses still tentative left out: the kernel announces them once DAD ends, which takes a while at 20,000);
  - exec to READY=1 (sd_notify, on a socket of ours) with no links and with the burst's links present (once the
    kernel's IPv6 addresses settled: how long that took), and how often each start's reading failed or was kept
    while the kernel changed it; then a start as every link goes down and up (READY=1, readings kept and read
    again, drift once the kernel settled);
  - `netdevctl links` and `netdevctl links --json=short` wall time and netdevd's CPU per call at the burst's links;
  - the time until every link's hooks ran for its settled state, and how many of the links and their
    net devices got their link-added / device-added (and, on delete, -removed) run;
  - journald's CPU and netdevd's journal entries per burst;
  - idle wake-ups (context switches of every thread) and threads started over --idle-seconds, before the
    bursts and after them;
  - the binary's size.

The test links' own IPv6 packets are dropped as they enter the namespace, before the kernel routes them (nftables;
--route-ipv6 keeps them): at 20,000 links the kernel's route lookups for them, in softirqs, would otherwise be counted
as netdevd's CPU (ipv6_ingress).

netdevd runs with the `Environment=` settings of Packaging/systemd/netdevd.service, as systemd runs it.

Every figure is printed as a line `name: value`, and the whole as JSON with --json FILE.
"""

import argparse
import json
import os
import shutil
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAIRS = 500  # --links / 2


def pair_name(i):
    """The i-th pair's first end (`nb007a`; `nb00007a` above 1,000 pairs). The other end ends in b."""
    return f"nb{i:0{max(3, len(str(PAIRS - 1)))}d}"


def size(links=None):
    """`1,000 links`: how big the burst is, for the figures' names."""
    return f"{2 * PAIRS if links is None else links:,} links"
UNIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Packaging", "systemd",
                    "netdevd.service")


def unit_environment(path):
    """The `Environment=` settings of the service unit the package ships, so that netdevd is measured as systemd
    runs it: each line's words split as systemd splits them (quotes, several assignments on a line), an empty
    `Environment=` resetting what came before. A word that is no assignment stops the harness."""
    environment = {}
    with open(path) as unit:
        for line in unit:
            if not line.startswith("Environment="):
                continue
            words = shlex.split(line[len("Environment="):])
            if not words:
                environment = {}
            for word in words:
                name, equals, value = word.partition("=")
                if not name or not equals:
                    sys.exit(f"load.py: {path}: cannot read {line.strip()!r}")
                environment[name] = value
    return environment


UNIT_ENVIRONMENT = unit_environment(UNIT)


def proc_stat(pid):
    """(utime+stime, cutime+cstime) of pid, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3); utime is field 14.
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return (utime + stime) / CLOCK_TICKS, (cutime + cstime) / CLOCK_TICKS


def machine_busy():
    """Seconds of CPU the whole machine has spent busy (all CPUs; /proc/stat's first line less idle and iowait)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / CLOCK_TICKS


def hook_runner_pids(pid):
    """The pids of netdevd's hook runner (its child `netdevd --serve-hooks`); none for a netdevd that starts hooks
    itself."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    runners = []
    for task in tasks:
        try:
            children = open(f"/proc/{pid}/task/{task}/children").read().split()
        except OSError:
            continue
        for child in children:
            try:
                if b"--serve-hooks" in open(f"/proc/{child}/cmdline", "rb").read():
                    runners.append(int(child))
            except (OSError, ValueError):
                continue
    return runners


def runner_stat(pid):
    """(utime+stime, cutime+cstime) of netdevd's hook runner, in seconds; zeros for a netdevd that starts hooks
    itself."""
    own = hooks = 0.0
    for runner in hook_runner_pids(pid):
        try:
            cpu, reaped = proc_stat(runner)
        except (OSError, ValueError):
            continue
        own += cpu
        hooks += reaped
    return own, hooks


def proc_status(pid, key):
    """A kB figure of /proc/PID/status, in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def memory_rollup(pid):
    """RSS / PSS / USS / private dirty of /proc/PID/smaps_rollup, in MiB, as one figure: the resident set, its
    proportional share (pages shared with other processes, a library's say, counted by their share), its private
    part (what the process alone holds: what ending it would give back), and of that the dirty part (written
    pages: the heap, stacks, relocated data; a library's code pages are private clean while no other process maps
    that library, and shared once one does)."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                fields[parts[0].rstrip(":")] = int(parts[1]) / 1024
    dirty = fields.get("Private_Dirty", 0)
    private = fields.get("Private_Clean", 0) + dirty
    return f"{fields.get('Rss', 0):.1f} / {fields.get('Pss', 0):.1f} / {private:.1f} / {dirty:.2f}"


def task_switches(pid):
    """{tid: (name, voluntary+involuntary context switches, CPU in seconds)} for every thread of pid. The CPU is the
    scheduler's count of the time the thread ran (schedstat, in ns), not utime+stime (10 ms ticks: a thread's share
    of a burst at a slow pace is a tick or two); the ticks where the kernel keeps no schedstat."""
    result = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                name, total = "", 0
                for line in f:
                    if line.startswith("Name:"):
                        name = line.split(None, 1)[1].strip()
                    if "ctxt_switches" in line:
                        total += int(line.split()[1])
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    cpu = int(f.read().split()[0]) / 1e9
            except (FileNotFoundError, ValueError, IndexError):
                pass
            result[tid] = (name, total, cpu)
        except FileNotFoundError:
            pass
    return result


def switches_by_thread(before, after, main_tid):
    """The context switches and CPU each thread name added from `before` to `after` (task_switches results), the
    main thread as "main": "main 2100 / 0.301 s, netdevd-journal 1500 / 0.052 s"."""
    totals = {}
    for tid, (name, switches, cpu) in after.items():
        _, switches_before, cpu_before = before.get(tid, (name, 0, 0.0))
        key = "main" if tid == str(main_tid) else name
        count, seconds = totals.get(key, (0, 0.0))
        totals[key] = (count + switches - switches_before, seconds + cpu - cpu_before)
    ordered = sorted(totals.items(), key=lambda item: -item[1][0])
    return ", ".join(f"{name} {count} / {seconds:.3f} s" for name, (count, seconds) in ordered if count or seconds)


def own_netns_pids(comm):
    """PIDs in this network namespace whose comm is `comm`."""
    mine = os.readlink("/proc/self/ns/net")
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm") as f:
                if f.read().strip() != comm:
                    continue
            if os.readlink(f"/proc/{entry}/ns/net") == mine:
                found.append(int(entry))
        except (FileNotFoundError, PermissionError, ProcessLookupError):
            pass
    return found


class Notifications:
    """An sd_notify socket: records when each message arrived."""

    def __init__(self, path):
        self.path = path
        if os.path.exists(path):
            os.unlink(path)
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.bind(path)
        self.messages = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while True:
            try:
                data = self.socket.recv(65536)
            except OSError:
                return
            now = time.monotonic()
            with self.lock:
                self.messages.append((now, data.decode(errors="replace")))

    def wait_for(self, line, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                for when, text in self.messages:
                    if line in text.split("\n"):
                        return when
            time.sleep(0.002)
        raise RuntimeError(f"no {line} from netdevd within {timeout} s")

    def close(self):
        self.socket.close()


class Daemon:
    """One netdevd process with its own socket, notify socket and hooks."""

    def __init__(self, binary, workdir, name, hooks_dir, record=None):
        self.binary = binary
        self.socket_path = os.path.join(workdir, name, "io.netdevd")
        os.makedirs(os.path.dirname(self.socket_path), exist_ok=True)
        self.notify = Notifications(os.path.join(workdir, name, "notify"))
        arguments = [
            binary, "--config", os.path.join(workdir, "netdevd.conf"), "--socket", self.socket_path,
            "--hooks-dir", hooks_dir, "--log-target", "journal", "--udev-source", "udev",
        ]
        if record:
            arguments += ["--record", record]
        environment = dict(os.environ, NOTIFY_SOCKET=self.notify.path)
        environment.update(UNIT_ENVIRONMENT)
        if os.environ.get("LOAD_GDB") and name == "main":
            arguments = ["gdb", "-q", "-batch", "-ex", "handle SIGPIPE nostop noprint", "-ex", "handle SIGTERM nostop",
                         "-ex", "run", "-ex", "thread apply all bt 25", "--args"] + arguments
        self.started = time.monotonic()
        self.process = subprocess.Popen(arguments, env=environment, stdin=subprocess.DEVNULL)
        self.pid = self.process.pid

    def ready_seconds(self, timeout=120):
        # Not 30 s: a 20,000-link run of 38 minutes once ended here, its start after the create burst slower than
        # that (udevd still behind on the machine's two cores), with no figure printed. A slow start is a figure.
        return self.notify.wait_for("READY=1", timeout) - self.started

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.notify.close()


class Sampler:
    """Samples VmRSS every 20 ms; `peak` is the highest sample since the last reset. With `smaps` (a directory),
    /proc/PID/smaps is copied there as smaps-LABEL-peak whenever the burst's peak grows by 1 MiB or more (where the
    memory is held at the peak)."""

    def __init__(self, pid, smaps=None):
        self.pid = pid
        self.peak = 0.0
        self.smaps = smaps
        self.label = None
        self.saved = 0.0
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while self.running:
            try:
                self.peak = max(self.peak, proc_status(self.pid, "VmRSS"))
                if self.smaps and self.label and self.peak >= self.saved + 1:
                    self.saved = self.peak
                    save_smaps(self.smaps, self.pid, f"{self.label}-peak")
            except (FileNotFoundError, ProcessLookupError):
                return
            time.sleep(0.02)

    def reset(self, label=None):
        self.peak = 0.0
        self.saved = 0.0
        self.label = label.replace(" #", "-") if label else None

    def stop(self):
        self.running = False


def netdevctl(ctl, socket_path, *arguments):
    result = subprocess.run(
        [ctl, "--socket", socket_path, *arguments], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"netdevctl {' '.join(arguments)} failed: {result.stderr.strip()}")
    return result.stdout


def links(ctl, socket_path):
    return json.loads(netdevctl(ctl, socket_path, "links", "--json=short"))


def events_taken(ctl, socket_path):
    """`netdevd_events_total`: the events netdevd's loop took (kernel and udev messages, timers, hook results)."""
    for line in netdevctl(ctl, socket_path, "metrics").splitlines():
        if line.startswith("netdevd_events_total "):
            return int(float(line.split()[1]))
    raise RuntimeError("netdevctl metrics has no netdevd_events_total")


class MonitorClient:
    """`netdevctl monitor --json=short --changes`: its first line is the state, each further line one change; the
    state it rebuilds from them is what an operator's monitor holds. `ended` is netdevctl's exit and stderr if it
    ended (a monitor netdevd cut off says io.netdevd.ClientTooSlow)."""

    def __init__(self, ctl, socket_path):
        self.process = subprocess.Popen(
            [ctl, "--socket", socket_path, "monitor", "--json=short", "--changes"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.links = None
        self.sequence = None
        # The last sequence read, applied or held.
        self.received = None
        self.changes = 0
        self.problems = []
        # While held, replies are read (netdevd is never made to wait) but kept, not applied: the state stays at
        # a sequence netdevd's GetState can be compared with while changes keep coming (at 20,000 links the kernel
        # settles addresses for minutes after a burst).
        self.held = None
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.process.stdout:
            reply = json.loads(line)
            with self.lock:
                self.received = (reply["state"] if "state" in reply else reply["change"])["sequence"]
                if self.held is not None:
                    self.held.append(reply)
                else:
                    self._apply(reply)

    def _apply(self, reply):
        if "state" in reply:
            state = reply["state"]
            self.links = {link["index"]: link for link in state["links"]}
            self.sequence = state["sequence"]
            return
        change = reply["change"]
        if self.sequence is None or change["sequence"] != self.sequence + 1:
            self.problems.append(f"change {change['sequence']} after {self.sequence}")
        self.sequence = change["sequence"]
        self.changes += 1
        for index in change.get("removedLinks", []):
            self.links.pop(index, None)
        for link in change.get("links", []):
            self.links[link["index"]] = link

    def hold(self):
        with self.lock:
            if self.held is None:
                self.held = []

    def release(self):
        with self.lock:
            for reply in self.held or []:
                self._apply(reply)
            self.held = None

    def wait_for_sequence(self, sequence, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            with self.lock:
                if self.received is not None and self.received >= sequence:
                    return True
            time.sleep(0.05)
        return False

    def differences(self, listed, sequence):
        """How the rebuilt links differ from `listed`, netdevd's links at `sequence` (the replies held up to it
        applied first); None when this monitor is past `sequence` (it was not held before netdevd answered)."""
        with self.lock:
            held = self.held or []
            while held and (held[0]["state"] if "state" in held[0] else held[0]["change"])["sequence"] <= sequence:
                self._apply(held.pop(0))
            if self.sequence != sequence:
                return None
            ours = self.links or {}
            theirs = {link["index"]: link for link in listed}
            return sum(1 for index in set(ours) | set(theirs) if ours.get(index) != theirs.get(index))

    def ended(self):
        if self.process.poll() is None:
            return None
        return f"exit {self.process.returncode}: {self.process.stderr.read().strip()[:200]}"

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait()


def varlink_call(socket_path, method, more=False):
    """A raw Varlink connection with `method` called (no parameters): what a client in any language would do."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(socket_path)
    call = {"method": method, "parameters": {}}
    if more:
        call["more"] = True
    connection.sendall(json.dumps(call).encode() + b"\0")
    return connection


def varlink_reply(connection, pending=b""):
    """The next reply on `connection` (and what was read past it)."""
    while b"\0" not in pending:
        data = connection.recv(1 << 20)
        if not data:
            raise RuntimeError("netdevd closed the connection")
        pending += data
    reply, _, rest = pending.partition(b"\0")
    return json.loads(reply), rest


class ListLinksHammer:
    """A client calling ListLinks `rate` times a second (each on a connection of its own, the whole reply read):
    what it costs netdevd, and whether the loop still follows the kernel meanwhile."""

    def __init__(self, socket_path, rate):
        self.socket_path = socket_path
        self.rate = rate
        self.calls = 0
        self.failures = 0
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        next_call = time.monotonic()
        while self.running:
            try:
                with varlink_call(self.socket_path, "io.netdevd.ListLinks") as connection:
                    varlink_reply(connection)
                self.calls += 1
            except (OSError, RuntimeError):
                self.failures += 1
            next_call += 1 / self.rate
            time.sleep(max(0.0, next_call - time.monotonic()))

    def stop(self):
        self.running = False
        self.thread.join()


def hammered_burst(figures, ctl, daemon, rate):
    """With the burst's links present and a client calling ListLinks `rate` times a second: 100 more veth pairs in
    one `ip -batch`, how long until netdevctl lists them, and what the client got meanwhile; then they go."""
    hammer = ListLinksHammer(daemon.socket_path, rate)
    time.sleep(2)
    began = time.monotonic()
    lines = []
    for i in range(100):
        lines += [f"link add hb{i:03d}a type veth peer name hb{i:03d}b", f"link set hb{i:03d}a up",
                  f"link set hb{i:03d}b up"]
    cpu = proc_stat(daemon.pid)[0]
    subprocess.run(["ip", "-batch", "-"], input="\n".join(lines) + "\n", text=True, check=True)
    returned = time.monotonic()
    listed, _ = wait_for_links(ctl, daemon.socket_path, "hb", 200, returned)
    hammer.stop()
    label = f"ListLinks {rate:g}/s at {size()}"
    figures[f"{label}: 200 more links listed, after ip -batch returned (s)"] = round(listed, 3)
    figures[f"{label}: calls answered per second / failed"] = (
        f"{hammer.calls / (time.monotonic() - began + 2):.1f} / {hammer.failures}")
    figures[f"{label}: netdevd CPU per second meanwhile (s)"] = round(
        (proc_stat(daemon.pid)[0] - cpu) / (time.monotonic() - returned + (returned - began)), 2)
    subprocess.run(["ip", "-batch", "-"], input="".join(f"link del hb{i:03d}a\n" for i in range(100)), text=True,
                   check=True)
    wait_for_links(ctl, daemon.socket_path, "hb", 0, time.monotonic())


def cut_off_warnings(pid):
    """netdevd's journal entries saying it cut a control client off for leaving its replies unread."""
    output = subprocess.run(
        ["journalctl", "--no-pager", f"_PID={pid}", "-p", "warning", "-o", "cat"], capture_output=True, text=True).stdout
    return sum(1 for line in output.splitlines() if "ClientTooSlow" in line)


def entries_of(pid, message_id):
    """How many journal entries netdevd `pid` wrote with this MESSAGE_ID (catalog IDs do not change)."""
    output = subprocess.run(
        ["journalctl", "--no-pager", f"_PID={pid}", f"MESSAGE_ID={message_id}", "-o", "cat"],
        capture_output=True, text=True).stdout
    return len(output.splitlines())


def reading_retries(pid):
    """How many times netdevd's start-up reading of links and devices failed and was tried again."""
    return entries_of(pid, "4d0b1a6f8e2c4b7e9a31c5d2e7f80a08")


def read_times(pid):
    """`310 / 620`: how long netdevd `pid`'s start took to read rtnetlink and udev's devices (ms), as it journaled."""
    output = subprocess.run(
        ["journalctl", "--no-pager", f"_PID={pid}", "MESSAGE_ID=4d0b1a6f8e2c4b7e9a31c5d2e7f80a01", "-o", "json"],
        capture_output=True, text=True).stdout
    for line in output.splitlines():
        entry = json.loads(line)
        return f"{entry.get('NETDEVD_KERNEL_READ_MSEC', '?')} / {entry.get('NETDEVD_DEVICES_READ_MSEC', '?')}"
    return "? / ?"


KEPT_WHILE_CHANGING = "4d0b1a6f8e2c4b7e9a31c5d2e7f80a09"
READ_AGAIN = "4d0b1a6f8e2c4b7e9a31c5d2e7f80a0a"


def wait_for_settled_addresses(timeout=600):
    """Seconds until the kernel holds no IPv6 address as tentative (DAD done everywhere), at most `timeout`."""
    began = time.monotonic()
    while time.monotonic() - began < timeout and subprocess.run(
            ["ip", "-6", "addr", "show", "tentative"], capture_output=True, text=True).stdout.strip():
        time.sleep(1)
    return time.monotonic() - began


def start_under_churn(figures, binary, workdir, hooks_dir, ctl):
    """A start while the kernel configures addresses: every burst link taken down and up (their IPv6 addresses
    go tentative and change again as DAD ends), netdevd started as `ip -batch` returns. READY=1; how often its
    reading was kept while the kernel changed it, and read again; and its drift against the kernel once the kernel
    settled and netdevd read again (`settle_drift` without tentative addresses)."""
    lines = [f"link set {pair_name(i)}a down" for i in range(PAIRS)]
    lines += [f"link set {pair_name(i)}a up" for i in range(PAIRS)]
    subprocess.run(["ip", "-batch", "-"], input="\n".join(lines) + "\n", text=True, check=True)
    churned = Daemon(binary, workdir, "churned", hooks_dir)
    try:
        ready = churned.ready_seconds()
        settled = wait_for_settled_addresses()
        # The last reading kept is read again within 30 s (netdevd's longest wait).
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline and (
                entries_of(churned.pid, READ_AGAIN) < entries_of(churned.pid, KEPT_WHILE_CHANGING)):
            time.sleep(1)
        problems = settle_drift(ctl, churned.socket_path, tentative=False)
        cpu, _ = proc_stat(churned.pid)
        kept, again = entries_of(churned.pid, KEPT_WHILE_CHANGING), entries_of(churned.pid, READ_AGAIN)
        failed = reading_retries(churned.pid)
        took = read_times(churned.pid)
    finally:
        churned.stop()
    label = f"a start as {size()} go down and up"
    figures[f"{label}: exec to READY=1 (ms)"] = round(ready * 1000, 1)
    figures[f"{label}: its reading of rtnetlink / udev (ms)"] = took
    figures[f"{label}: readings kept while the kernel changed them / read again / failed"] = (
        f"{kept} / {again} / {failed}")
    figures[f"{label}: the kernel settled after (s); netdevd's CPU by then (s)"] = (
        f"{settled:.1f}; {cpu:.2f}")
    figures[f"{label}: drift once settled"] = len(problems)
    for problem in problems[:5]:
        print(f"{label}: drift: {problem}", file=sys.stderr)


def stuck_monitor(figures, daemon, label):
    """A monitor that reads its first reply, then stops reading while every burst link goes down and up (again, up
    to three times, until it is cut off: one round's changes can fit in the bound): netdevd cuts it off
    (io.netdevd.ClientTooSlow) once its bound of unread replies is reached. How long that took, whether the client,
    reading again, finds the error (or, never cut off, how much it read), and netdevd's RSS before, at the cut and
    after."""
    rss_before = proc_status(daemon.pid, "VmRSS")
    warnings_before = cut_off_warnings(daemon.pid)
    connection = varlink_call(daemon.socket_path, "io.netdevd.Monitor", more=True)
    _, pending = varlink_reply(connection)
    started = time.monotonic()
    cut = None
    rounds = 0
    while cut is None and rounds < 3:
        rounds += 1
        for start in range(0, PAIRS, 250):
            lines = []
            for i in range(start, min(PAIRS, start + 250)):
                lines += [f"link set {pair_name(i)}a down", f"link set {pair_name(i)}a up"]
            subprocess.run(["ip", "-batch", "-"], input="\n".join(lines) + "\n", text=True, check=True)
            if cut_off_warnings(daemon.pid) > warnings_before:
                cut = time.monotonic() - started
                break
    deadline = time.monotonic() + 10
    while cut is None and time.monotonic() < deadline:
        if cut_off_warnings(daemon.pid) > warnings_before:
            cut = time.monotonic() - started
        time.sleep(0.1)
    rss_cut = proc_status(daemon.pid, "VmRSS")
    told = pending
    connection.settimeout(10)
    try:
        while True:
            data = connection.recv(1 << 20)
            if not data:
                break
            told += data
    except OSError:
        pass
    connection.close()
    time.sleep(2)
    figures[f"{label}: a monitor that stops reading, cut off after (s); every link down and up, times"] = (
        f"{round(cut, 2) if cut else 'not cut off'}; {rounds}")
    figures[f"{label}: ... then reading, it finds io.netdevd.ClientTooSlow; bytes it read"] = (
        f"{b'io.netdevd.ClientTooSlow' in told}; {len(told)}")
    figures[f"{label}: ... netdevd RSS before / at the cut / 2 s after it read (MiB)"] = (
        f"{rss_before:.1f} / {rss_cut:.1f} / {proc_status(daemon.pid, 'VmRSS'):.1f}")


def textfile_writes(figures, daemon, ctl, workdir, enabled, options):
    """The metrics textfile at the burst's links: turned on by a reload (unless --metrics had it on from the start),
    then how often netdevd writes it while links keep changing (up to 2,000 pairs' links down and up), what a
    write costs netdevd (one link changed, then quiet: netdevd's CPU over it by the writes it made, median of 5),
    and whether `promtool check metrics` finds it clean. Turned off again after, so the starts below do not write it.
    With --perf, the five changes are profiled into PERF-textfile."""
    config = os.path.join(workdir, "netdevd.conf")
    directory = os.path.join(workdir, "textfile")
    path = os.path.join(directory, "netdevd.prom")
    if not enabled:
        os.makedirs(directory, exist_ok=True)
        with open(config, "w") as f:
            f.write(f"[Metrics]\nTextfileDirectory={directory}\n")
        netdevctl(ctl, daemon.socket_path, "reload")

    def written():
        try:
            return os.stat(path).st_ino
        except FileNotFoundError:
            return None

    def wait_for_write(after, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if written() not in (None, after):
                return True
            time.sleep(0.01)
        return False

    if not wait_for_write(None):
        raise RuntimeError("netdevd did not write its metrics textfile within 10 s of the reload")
    time.sleep(1.5)
    costs, counts = [], []
    profiler = start_profile(options, daemon, "textfile")
    for attempt in range(5):
        inode = written()
        cpu_before, _ = proc_stat(daemon.pid)
        # A link down, then the same link up again.
        subprocess.run(["ip", "link", "set", f"{pair_name(attempt // 2)}a", "down" if attempt % 2 == 0 else "up"],
                       check=True)
        if not wait_for_write(inode):
            raise RuntimeError("netdevd did not write its metrics textfile within 10 s of a link's change")
        # The change's later messages (its addresses, its routes) may make a second write a second after the first:
        # each write seen until netdevd has been quiet for 1.2 s is counted, and the CPU divided among them.
        count, inode, quiet_until = 1, written(), time.monotonic() + 1.2
        while time.monotonic() < quiet_until:
            if written() != inode:
                count, inode, quiet_until = count + 1, written(), time.monotonic() + 1.2
            time.sleep(0.01)
        costs.append((proc_stat(daemon.pid)[0] - cpu_before) / count)
        counts.append(count)
    stop_profile(profiler)
    subprocess.run(["ip", "link", "set", f"{pair_name(2)}a", "up"], check=True)
    # Links down and up, watched for writes (each replaces the file: a new inode). The time between two is that of
    # their last bytes written (mtime), not of when this loop saw them, which on a machine this busy can be late by a
    # large part of a second.
    flapped = min(PAIRS, 2000)
    writes = []
    inode = written()
    flapping = subprocess.Popen(["ip", "-batch", "-"], stdin=subprocess.PIPE, text=True)
    flapping.stdin.write("".join(f"link set {pair_name(i)}a down\nlink set {pair_name(i)}a up\n"
                                 for i in range(flapped)))
    flapping.stdin.close()
    quiet_after = None
    while quiet_after is None or time.monotonic() < quiet_after:
        now = written()
        if now != inode:
            try:
                writes.append(os.stat(path).st_mtime_ns / 1e9)
            except FileNotFoundError:
                pass
            inode = now
        if quiet_after is None and flapping.poll() is not None:
            quiet_after = time.monotonic() + 2.5
        time.sleep(0.005)
    gaps = [b - a for a, b in zip(writes, writes[1:])]
    figures[f"metrics textfile at {size()}: netdevd's CPU for a write, one link changed (ms, median of 5); writes each"] = (
        f"{statistics.median(costs) * 1000:.1f}; {' '.join(str(count) for count in counts)}")
    figures[f"metrics textfile at {size()}: writes while {flapped:,} links went down and up / least time between two (s)"] = (
        f"{len(writes)} / {min(gaps):.2f}" if gaps else f"{len(writes)} / -")
    figures[f"metrics textfile at {size()} (bytes)"] = os.path.getsize(path)
    # The one `make test-servers` unpacks (the Makefile exports where), or an installed one.
    servers = os.environ.get("NETDEVD_TEST_SERVERS", "")
    promtool = (os.path.join(servers, "promtool") if servers and os.access(os.path.join(servers, "promtool"), os.X_OK)
                else shutil.which("promtool"))
    if promtool:
        with open(path, "rb") as f:
            check = subprocess.run([promtool, "check", "metrics"], stdin=f, capture_output=True, text=True)
        problems = (check.stdout + check.stderr).strip().splitlines()
        figures[f"metrics textfile at {size()}: promtool check metrics"] = (
            "clean" if check.returncode == 0 and not problems else f"{len(problems)} problems: {problems[:2]}")
    else:
        figures[f"metrics textfile at {size()}: promtool check metrics"] = "not run (no promtool: make test-servers)"
    if not enabled:
        open(config, "w").close()
        netdevctl(ctl, daemon.socket_path, "reload")


def check_monitors(figures, label, monitors, ctl, socket_path):
    """Each monitor's rebuilt state against ListLinks, once it has caught up with netdevd's sequence."""
    if not monitors:
        return
    behind, differing, cut, gaps, uncompared = 0, 0, [], 0, 0
    waiting = list(monitors)
    deadline = time.monotonic() + 60
    while waiting:
        # GetState: the links and the sequence of one model. Each monitor is held first (what it reads is kept, not
        # applied), so none is past that sequence when netdevd answers, then compared at it; one that moved past it
        # anyway is compared with a newer state in the next pass.
        for monitor in waiting:
            monitor.hold()
        state = json.loads(netdevctl(ctl, socket_path, "status", "--json=short"))
        moved_on = []
        for monitor in waiting:
            if not monitor.wait_for_sequence(state["sequence"], max(0.1, deadline - time.monotonic())):
                if monitor.ended():
                    cut.append(monitor.ended())
                else:
                    behind += 1
                continue
            found = monitor.differences(state["links"], state["sequence"])
            if found is None:
                if time.monotonic() < deadline:
                    moved_on.append(monitor)
                else:
                    uncompared += 1
                continue
            differing += 1 if found != 0 else 0
            gaps += len(monitor.problems)
        for monitor in monitors:
            monitor.release()
        waiting = moved_on
        if waiting:
            time.sleep(0.2)
    figures[f"{label}: monitors equal to netdevd's links / differing / behind / ended / not compared / sequence gaps"] = (
        f"{len(monitors) - differing - behind - len(cut) - uncompared} / {differing} / {behind} / {len(cut)} / "
        f"{uncompared} / {gaps}")
    figures[f"{label}: changes each monitor received (median)"] = statistics.median(m.changes for m in monitors)
    for reason in cut[:3]:
        print(f"  monitor ended: {reason}", file=sys.stderr)


def count_burst_links(ctl, socket_path, prefix):
    return sum(1 for link in links(ctl, socket_path) if link["name"].startswith(prefix))


def wait_for_links(ctl, socket_path, prefix, count, after, timeout=120):
    """Seconds from `after` until `netdevctl links` lists exactly `count` links named prefix*, and the polls made."""
    deadline = time.monotonic() + timeout
    polls = 0
    while time.monotonic() < deadline:
        polls += 1
        if count_burst_links(ctl, socket_path, prefix) == count:
            return time.monotonic() - after, polls
        time.sleep(0.005)
    raise RuntimeError(f"netdevctl did not list {count} {prefix}* links within {timeout} s")


def drift(ctl, socket_path, tentative=True):
    """Differences between netdevd's links and addresses and the kernel's (`ip -j link`, `ip -j addr`). With
    `tentative` False, an IPv6 address the kernel still holds as tentative (DAD not done: the kernel announces it
    only once DAD ends, though its dump lists it) is left out on both sides."""
    # The kernel first, then netdevd: at 20,000 links `ip -j addr` takes seconds, and an address whose DAD ends
    # meanwhile would be in the kernel's list and not yet in a netdevd list read before it. Read in this order, an
    # address still tentative for the kernel is left out on both sides, and one that was done is in netdevd's.
    kernel = json.loads(subprocess.run(["ip", "-j", "addr"], capture_output=True, text=True, check=True).stdout)
    kernel_links = json.loads(
        subprocess.run(["ip", "-j", "link"], capture_output=True, text=True, check=True).stdout)
    ours = {link["index"]: link for link in links(ctl, socket_path)}
    problems = []
    kernel_by_index = {entry["ifindex"]: entry for entry in kernel_links}
    if set(ours) != set(kernel_by_index):
        problems.append(
            f"links only in netdevd: {sorted(set(ours) - set(kernel_by_index))[:5]}, "
            f"only in the kernel: {sorted(set(kernel_by_index) - set(ours))[:5]}")
    for entry in kernel:
        link = ours.get(entry["ifindex"])
        if link is None:
            continue
        if link["name"] != entry["ifname"]:
            problems.append(f"{entry['ifindex']}: name {link['name']} != {entry['ifname']}")
        addresses = {f"{a['local']}/{a['prefixlen']}" for a in entry.get("addr_info", [])
                     if tentative or not a.get("tentative")}
        listed = set(link["addresses"])
        if not tentative:
            listed -= {f"{a['local']}/{a['prefixlen']}" for a in entry.get("addr_info", []) if a.get("tentative")}
        if listed != addresses:
            problems.append(f"{entry['ifname']}: addresses {sorted(link['addresses'])} != {sorted(addresses)}")
    return problems


def settle_drift(ctl, socket_path, timeout=None, tentative=True):
    """Drift once the kernel has settled (DAD finishing changes addresses for a second or two after a burst; longer
    with thousands of links), and how long it took to be none."""
    began = time.monotonic()
    deadline = began + (timeout or max(10, PAIRS / 250))
    problems = drift(ctl, socket_path, tentative)
    while problems and time.monotonic() < deadline:
        time.sleep(0.2)
        problems = drift(ctl, socket_path, tentative)
    settle_drift.seconds = time.monotonic() - began
    return problems


def journal_entries(pid):
    """netdevd's journal entries so far, by MESSAGE_ID (hooks' output has none)."""
    output = subprocess.run(
        ["journalctl", "--no-pager", f"_PID={pid}", "-o", "json", "--output-fields=MESSAGE_ID"],
        capture_output=True, text=True).stdout
    counts = {}
    for line in output.splitlines():
        kind = json.loads(line).get("MESSAGE_ID", "-")
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def entries_since(before, after):
    return sum(after.values()) - sum(before.values())


def entries_by_kind(before, after, catalog):
    kinds = {kind: after[kind] - before.get(kind, 0) for kind in after if after[kind] > before.get(kind, 0)}
    return ", ".join(f"{catalog.get(kind, kind)} {count}" for kind, count in sorted(kinds.items(), key=lambda x: -x[1]))


def save_smaps(directory, pid, name):
    """/proc/PID/smaps as `directory`/smaps-`name`, when a directory was asked for."""
    if directory:
        os.makedirs(directory, exist_ok=True)
        shutil.copy(f"/proc/{pid}/smaps", os.path.join(directory, f"smaps-{name}"))


def message_catalog(binary):
    """MESSAGE_ID -> subject, from netdevd --print-catalog."""
    output = subprocess.run([binary, "--print-catalog"], capture_output=True, text=True).stdout
    catalog = {}
    current = None
    for line in output.splitlines():
        if line.startswith("-- "):
            current = line[3:].strip()
        elif line.startswith("Subject: ") and current:
            catalog[current] = line[len("Subject: "):]
    return catalog


def wait_for_quiet(log_path, after, quiet=2.0, timeout=180):
    """Seconds from `after` until the hook log's last line, once it has not grown for `quiet` seconds (a hook of one
    event's directory does not run for every link's settled state, so that cannot be waited for)."""
    deadline = time.monotonic() + timeout
    size, changed = -1, time.monotonic()
    while time.monotonic() < deadline:
        now_size = os.path.getsize(log_path)
        if now_size != size:
            size, changed = now_size, time.monotonic()
        elif time.monotonic() - changed >= quiet:
            return changed - after
        time.sleep(0.05)
    raise RuntimeError(f"the hook log did not settle within {timeout} s")


def wait_for_hooks(log_path, ctl, socket_path, prefix, after, timeout=180):
    """Seconds from `after` until every prefix* link has had a hook run with the state netdevd shows for it."""
    deadline = time.monotonic() + timeout
    states = {}
    last_states = 0.0
    while time.monotonic() < deadline:
        now = time.monotonic()
        if now - last_states > 0.5:
            states = {l["name"]: l["operationalState"] for l in links(ctl, socket_path) if l["name"].startswith(prefix)}
            last_states = now
        seen = set()
        with open(log_path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[0] in ("link-state", "link-added") and states.get(parts[1]) == parts[2]:
                    seen.add(parts[1])
        if states and len(seen) == len(states):
            return time.monotonic() - after
        time.sleep(0.05)
    raise RuntimeError(f"hooks did not run for every link's settled state within {timeout} s")


def lifecycle_runs(log_path, start, event, prefix, expected, timeout=30):
    """`event` hook runs since line `start` of the hook log for links or devices named prefix*, waiting up to
    `timeout` s for `expected` of them: "N of M" (and how many runs were duplicates, which must never happen)."""
    deadline = time.monotonic() + timeout
    while True:
        names = []
        with open(log_path) as f:
            for number, line in enumerate(f):
                parts = line.split()
                if number >= start and len(parts) >= 2 and parts[0] == event \
                        and os.path.basename(parts[1]).startswith(prefix):
                    names.append(parts[1])
        if len(set(names)) >= expected or time.monotonic() > deadline:
            duplicates = len(names) - len(set(names))
            return f"{len(set(names))} of {expected:,}" + (f" ({duplicates} duplicate runs)" if duplicates else "")
        time.sleep(0.2)


def idle(pid, seconds):
    before = task_switches(pid)
    time.sleep(seconds)
    after = task_switches(pid)
    wakeups = 0
    for tid, (name, count, _) in after.items():
        added = count - before.get(tid, (name, 0, 0.0))[1]
        wakeups += added
        if added > 0:
            print(f"  idle: thread {tid} ({name}) switched {added} times", file=sys.stderr)
    started = len(set(after) - set(before))
    return wakeups * 60 / seconds, started * 60 / seconds


def ipv6_ingress_option(parser):
    """--route-ipv6: let the test links' IPv6 packets be routed, as before nftables dropped them (see ipv6_ingress)."""
    parser.add_argument("--route-ipv6", action="store_true",
                        help="route the test links' own IPv6 packets rather than drop them as they enter the "
                        "namespace (the kernel's route lookups are then counted as netdevd's CPU)")


def ipv6_ingress(route):
    """Drops every IPv6 packet as it enters the namespace, before the kernel routes it (nftables, prerouting), unless
    `route`; returns what it did, for the figures. The test links' own IPv6 traffic (duplicate address detection,
    MLD reports, router solicitations: each veth end sends them to the other) is otherwise routed as it arrives, and
    with 20,000 links each lookup walks a multicast route per link, in softirqs that this kernel (without
    CONFIG_IRQ_TIME_ACCOUNTING) counts as the CPU of the thread they interrupted, often netdevd's loop: a third of
    its CPU for a 20,000-link delete. Dropping the packets changes none of the kernel's messages (nothing answers
    them either way), so what is measured is netdevd's own work. Needs `nft` (Debian's nftables)."""
    if route:
        return "routed (--route-ipv6): the route lookups' softirqs count as netdevd's CPU"
    # The rule drops every IPv6 packet the namespace receives: never in the host's.
    if not os.environ.get("NETDEVD_TEST_HARNESS"):
        sys.exit("the IPv6 drop is only made inside Tests/Harness/in-netns.sh (run the benchmark through it or make)")
    if not shutil.which("nft"):
        sys.exit("nft not found: install nftables (make benchmark-daemon does), or pass --route-ipv6 to measure "
                 "with the kernel's route lookups counted as netdevd's CPU")
    rules = ("table ip6 netdevd_benchmark {\n chain ingress {\n  type filter hook prerouting priority raw; "
             "policy drop;\n  iifname \"lo\" accept\n }\n}\n")
    subprocess.run(["nft", "-f", "-"], input=rules, text=True, check=True)
    return "dropped before routing (nftables), lo's excepted"


def work_directory(binary, name):
    """A throw-away directory under /run for one run: (the directory, netdevctl in it (a link to `binary`), its
    empty hooks.d)."""
    workdir = tempfile.mkdtemp(prefix=f"netdevd-{name}-", dir="/run")
    ctl = os.path.join(workdir, "netdevctl")
    os.symlink(binary, ctl)
    hooks_dir = os.path.join(workdir, "hooks.d")
    os.makedirs(hooks_dir)
    os.chmod(workdir, 0o755)
    return workdir, ctl, hooks_dir


def start_profile(options, daemon, label):
    """perf record of netdevd over one burst, into `--perf`-LABEL (the profile of each burst alone, so that two sizes
    compare); None when no profile was asked for."""
    if not options.perf:
        return None
    return subprocess.Popen(
        ["perf", "record", "-q", "-e", options.perf_event, "-g", "-p", str(daemon.pid),
         "-o", f"{options.perf}-{label.replace(' #', '-')}"]
        + (["-F", "2000"] if options.perf_event == "cpu-clock" else []), stdout=subprocess.DEVNULL)


def stop_profile(profiler):
    if profiler:
        profiler.send_signal(signal.SIGINT)
        profiler.wait()


def burst(figures, label, batch_lines, ctl, daemon, sampler, expected, journald):
    """Runs one `ip -batch` and waits until netdevctl lists `expected` links; returns the counters before it and
    when `ip -batch` returned."""
    with tempfile.NamedTemporaryFile("w", suffix=".batch", delete=False) as f:
        f.write("\n".join(batch_lines) + "\n")
        batch = f.name
    cpu, children = proc_stat(daemon.pid)
    runner, runner_children = runner_stat(daemon.pid)
    before = {
        "cpu": cpu, "children": children + runner_children, "runner": runner,
        "journald": sum(proc_stat(p)[0] for p in journald),
        "entries": journal_entries(daemon.pid), "switches": task_switches(daemon.pid),
        "events": events_taken(ctl, daemon.socket_path),
    }
    sampler.reset(label)
    started = time.monotonic()
    subprocess.run(["ip", "-batch", batch], check=True)
    returned = time.monotonic()
    os.unlink(batch)
    listed, polls = wait_for_links(ctl, daemon.socket_path, "nb", expected, returned, timeout=max(120, PAIRS / 20))
    figures[f"{label}: ip -batch took (s)"] = round(returned - started, 3)
    figures[f"{label}: netdevctl links lists all, after ip -batch returned (s)"] = round(listed, 3)
    figures[f"{label}: netdevctl polls while waiting"] = polls
    return before, returned


def burst_costs(figures, label, before, daemon, journald, sampler, catalog, rss_label, problems, ctl):
    """What the burst cost since `before`: CPU, switches, journal, memory, and the drift found after it."""
    cpu, children = proc_stat(daemon.pid)
    events = events_taken(ctl, daemon.socket_path) - before["events"]
    runner, runner_children = runner_stat(daemon.pid)
    children += runner_children
    figures[f"{label}: netdevd CPU (s)"] = round(cpu - before["cpu"], 2)
    figures[f"{label}: events netdevd's loop took"] = events
    figures[f"{label}: netdevd CPU per event (µs)"] = round((cpu - before["cpu"]) * 1e6 / max(events, 1), 1)
    figures[f"{label}: netdevd CPU per link (µs)"] = round((cpu - before["cpu"]) * 1e6 / (2 * PAIRS), 1)
    figures[f"{label}: hook runner CPU (s)"] = round(runner - before["runner"], 2)
    switches = task_switches(daemon.pid)
    figures[f"{label}: netdevd context switches (threads that still exist)"] = sum(
        count for _, count, _ in switches.values()) - sum(count for _, count, _ in before["switches"].values())
    figures[f"{label}: context switches / CPU by thread (threads that still exist)"] = switches_by_thread(
        before["switches"], switches, daemon.pid)
    # The loop's thread sleeps when no message is waiting: a kernel that sends slowly wakes it once per few
    # messages, one that sends fast hands it many at a time. Its CPU per wake-up is what a message costs apart from
    # how fast the kernel sends them.
    main_tid = str(daemon.pid)
    if main_tid in switches and main_tid in before["switches"]:
        woken = switches[main_tid][1] - before["switches"][main_tid][1]
        spent = switches[main_tid][2] - before["switches"][main_tid][2]
        figures[f"{label}: events per wake-up of the main thread / its CPU per wake-up (µs)"] = (
            f"{events / max(woken, 1):.2f} / {spent * 1e6 / max(woken, 1):.0f}")
    figures[f"{label}: hook processes' CPU (s)"] = round(children - before["children"], 2)
    figures[f"{label}: journald CPU (s)"] = round(sum(proc_stat(p)[0] for p in journald) - before["journald"], 2)
    entries = journal_entries(daemon.pid)
    figures[f"{label}: netdevd journal entries"] = entries_since(before["entries"], entries)
    figures[f"{label}: journal entries by kind"] = entries_by_kind(before["entries"], entries, catalog)
    figures[f"{label}: peak RSS, 20 ms samples (MiB)"] = round(sampler.peak, 1)
    figures[f"{label}: {rss_label} (MiB)"] = round(proc_status(daemon.pid, "VmRSS"), 1)
    figures[f"{label}: {rss_label}, anonymous / file pages (MiB)"] = (
        f"{proc_status(daemon.pid, 'RssAnon'):.1f} / {proc_status(daemon.pid, 'RssFile'):.1f}")
    figures[f"{label}: {rss_label}, RSS / PSS / USS / private dirty (MiB)"] = memory_rollup(daemon.pid)
    figures[f"{label}: drift against ip -j link/addr"] = len(problems)
    figures[f"{label}: drift checks took (s)"] = round(settle_drift.seconds, 1)
    figures[f"{label}: resyncs so far (the kernel reported lost events)"] = json.loads(
        netdevctl(ctl, daemon.socket_path, "status", "--json=short"))["resyncs"]
    for problem in problems[:10]:
        print(f"  drift: {problem}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True, help="the release netdevd")
    parser.add_argument("--idle-seconds", type=float, default=60)
    parser.add_argument("--links", type=int, default=1000, help="links in the burst (half as many veth pairs)")
    parser.add_argument("--list-rate", type=float, default=0,
                        help="after the create burst, 100 more pairs made while a client calls ListLinks this many times a second")
    parser.add_argument("--stuck-monitor", action="store_true",
                        help="after the create burst, a monitor that stops reading while every link goes down and up")
    parser.add_argument("--monitors", type=int, default=0,
                        help="netdevctl monitor --json=short --changes clients attached through the bursts")
    parser.add_argument("--rounds", type=int, default=1, help="create/delete bursts in the same process")
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--record", help="netdevd --record FILE (costs CPU; for the replay benchmark's fixture)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--no-hooks", action="store_true", help="no hook (what netdevd costs without them)")
    parser.add_argument("--hook-event", help="put the hook in this event's own directory (link-state: link-state.d) "
                        "instead of hooks.d, so it runs for that event alone")
    parser.add_argument("--metrics", action="store_true",
                        help="[Metrics] TextfileDirectory= set, and netdevctl metrics timed at the burst's links")
    parser.add_argument("--perf", help="record a perf profile (cpu-clock) of netdevd over each burst into PERF-create and "
                        "PERF-delete, and over the textfile's writes for one link's change into PERF-textfile")
    parser.add_argument("--perf-event", default="cpu-clock", help="the event --perf samples")
    parser.add_argument("--smaps", help="copy netdevd's /proc/PID/smaps into this directory when idle, after each "
                        "delete (where the memory an idle netdevd holds is) and at each burst's peak (LABEL-peak)")
    ipv6_ingress_option(parser)
    options = parser.parse_args()
    global PAIRS
    PAIRS = max(1, options.links // 2)

    if not os.environ.get("NETDEVD_TEST_HARNESS"):
        sys.exit("load.py runs inside Tests/Harness/in-netns.sh (make benchmark-daemon)")

    binary = os.path.realpath(options.binary)
    workdir, ctl, hooks_dir = work_directory(binary, "load")
    hook_log = os.path.join(workdir, "hooks.log")
    open(hook_log, "w").close()
    if not options.no_hooks:
        hook_dir = hooks_dir
        if options.hook_event:
            hook_dir = os.path.join(workdir, f"{options.hook_event}.d")
            os.makedirs(hook_dir)
        hook = os.path.join(hook_dir, "50-log")
        with open(hook, "w") as f:
            f.write(f'#!/bin/sh\necho "$1 $2 $NETDEVD_OPER_STATE" >>{hook_log}\n')
        os.chmod(hook, 0o755)
    empty_hooks = os.path.join(workdir, "no-hooks.d")
    os.makedirs(empty_hooks)
    if options.metrics:
        textfiles = os.path.join(workdir, "textfile")
        os.makedirs(textfiles)
        with open(os.path.join(workdir, "netdevd.conf"), "w") as f:
            f.write(f"[Metrics]\nTextfileDirectory={textfiles}\n")

    figures = {}
    stripped = os.path.join(workdir, "netdevd.stripped")
    shutil.copy(binary, stripped)
    subprocess.run(["strip", stripped], check=True)
    figures["binary size (MB)"] = round(os.path.getsize(binary) / 1e6, 1)
    figures["binary size, stripped (MB)"] = round(os.path.getsize(stripped) / 1e6, 1)
    figures["environment from netdevd.service"] = " ".join(f"{k}={v}" for k, v in UNIT_ENVIRONMENT.items())
    figures["IPv6 packets entering the namespace"] = ipv6_ingress(options.route_ipv6)
    os.unlink(stripped)

    journald = own_netns_pids("systemd-journal")
    catalog = message_catalog(binary)
    daemon = Daemon(binary, workdir, "main", hooks_dir, record=options.record)
    sampler = None
    monitors = []
    try:
        figures["exec to READY=1, no links (ms)"] = round(daemon.ready_seconds() * 1000, 1)
        time.sleep(1)
        sampler = Sampler(daemon.pid, options.smaps)
        figures["RSS idle (MiB)"] = round(proc_status(daemon.pid, "VmRSS"), 1)
        save_smaps(options.smaps, daemon.pid, "idle")
        figures["RSS idle, anonymous / file pages (MiB)"] = (
            f"{proc_status(daemon.pid, 'RssAnon'):.1f} / {proc_status(daemon.pid, 'RssFile'):.1f}")
        figures["RSS idle, RSS / PSS / USS / private dirty (MiB)"] = memory_rollup(daemon.pid)
        if options.idle_seconds > 0:
            wakeups, threads = idle(daemon.pid, options.idle_seconds)
            figures[f"idle wake-ups per minute (over {options.idle_seconds:g} s)"] = round(wakeups, 1)
            figures["idle threads started per minute"] = round(threads, 1)
        monitors = [MonitorClient(ctl, daemon.socket_path) for _ in range(options.monitors)]
        if monitors:
            figures["monitors attached"] = len(monitors)

        for round_number in range(1, options.rounds + 1):
            label = "create" if options.rounds == 1 else f"create #{round_number}"
            create = []
            for i in range(PAIRS):
                create += [f"link add {pair_name(i)}a type veth peer name {pair_name(i)}b",
                           f"link set {pair_name(i)}a up", f"link set {pair_name(i)}b up"]
            hook_lines0 = sum(1 for _ in open(hook_log))
            profiler = start_profile(options, daemon, label)
            before, returned = burst(figures, label, create, ctl, daemon, sampler, 2 * PAIRS, journald)
            if options.hook_event:
                figures[f"{label}: the hook's runs ended, after ip -batch returned (s)"] = round(
                    wait_for_quiet(hook_log, returned), 2)
                figures[f"{label}: hook runs"] = sum(1 for _ in open(hook_log)) - hook_lines0
            elif not options.no_hooks:
                hooks = wait_for_hooks(hook_log, ctl, daemon.socket_path, "nb", returned)
                figures[f"{label}: every link's hooks ran for its settled state, after ip -batch returned (s)"] = round(
                    hooks, 2)
                for event in ("link-added", "device-added"):
                    figures[f"{label}: {event} runs"] = lifecycle_runs(hook_log, hook_lines0, event, "nb", 2 * PAIRS)
                figures[f"{label}: hook runs"] = sum(1 for _ in open(hook_log)) - hook_lines0
            problems = settle_drift(ctl, daemon.socket_path, tentative=False)
            time.sleep(1)
            check_monitors(figures, label, monitors, ctl, daemon.socket_path)
            burst_costs(
                figures, label, before, daemon, journald, sampler, catalog, f"RSS at {size()}", problems, ctl)
            stop_profile(profiler)

            if round_number == 1 and options.list_rate:
                hammered_burst(figures, ctl, daemon, options.list_rate)
            if round_number == 1 and options.stuck_monitor:
                stuck_monitor(figures, daemon, label)
            if round_number == 1:
                for arguments in (["links"], ["links", "--json=short"]):
                    times = []
                    for _ in range(20):
                        before = time.monotonic()
                        netdevctl(ctl, daemon.socket_path, *arguments)
                        times.append(time.monotonic() - before)
                    cpu_before, _ = proc_stat(daemon.pid)
                    for _ in range(20):
                        netdevctl(ctl, daemon.socket_path, *arguments)
                    cpu_after, _ = proc_stat(daemon.pid)
                    command = " ".join(["netdevctl"] + arguments)
                    figures[f"{command} at {size()}, wall (ms, median of 20)"] = round(
                        statistics.median(times) * 1000, 1)
                    figures[f"{command} at {size()}, netdevd CPU per call (ms)"] = round(
                        (cpu_after - cpu_before) * 1000 / 20, 1)
                # GetMetrics renders whether or not the file is written (--metrics).
                # The first call after the burst registers what the file's last write did not; then each is a
                # pass over the links.
                times = []
                for _ in range(6):
                    cpu_before, _ = proc_stat(daemon.pid)
                    before = time.monotonic()
                    text = netdevctl(ctl, daemon.socket_path, "metrics")
                    times.append((time.monotonic() - before, proc_stat(daemon.pid)[0] - cpu_before))
                figures[f"netdevctl metrics at {size()}, first call: wall / netdevd CPU (ms)"] = (
                    round(times[0][0] * 1000, 1), round(times[0][1] * 1000, 1))
                figures[f"netdevctl metrics at {size()}, median of 5 more: wall / netdevd CPU (ms)"] = (
                    round(statistics.median(t[0] for t in times[1:]) * 1000, 1),
                    round(statistics.median(t[1] for t in times[1:]) * 1000, 1))
                figures[f"metrics text at {size()} (bytes, series)"] = (
                    len(text.encode()), sum(1 for line in text.splitlines() if not line.startswith("#")))
                textfile_writes(figures, daemon, ctl, workdir, options.metrics, options)
                # netdevd's own start, not udevd's backlog: udevd may still be running the burst's rules.
                subprocess.run(["udevadm", "settle", "-t", "30"], check=False)
                # Nor the kernel's: after the bursts above it may still be adding the links' IPv6 addresses (at
                # 20,000 links, thousands stay tentative for minutes), and an address dump that runs into those
                # changes 5 times in a row is kept and read again later. These starts are on a quiet kernel; the
                # start after them is on a busy one. How long the kernel took, and each start's readings, are
                # figures of their own.
                figures["before the starts: the kernel's IPv6 addresses settled after (s)"] = round(
                    wait_for_settled_addresses(), 1)
                retries, reads = [], []
                starts, starts_cpu = [], []
                udevd = own_netns_pids("systemd-udevd")
                # What else ran on the machine meanwhile: a start reads the state with two threads, so another busy
                # process (journald writing the start's entries, the main netdevd) lengthens it.
                machine_before, journald_before = machine_busy(), sum(proc_stat(p)[0] for p in journald)
                udevd_before = sum(proc_stat(p)[0] for p in udevd)
                main_before = proc_stat(daemon.pid)[0]
                starts_began = time.monotonic()
                for attempt in range(3):
                    second = Daemon(binary, workdir, "second", empty_hooks)
                    try:
                        starts.append(second.ready_seconds())
                        starts_cpu.append(proc_stat(second.pid)[0])
                        if attempt == 0:
                            time.sleep(0.5)
                            figures[f"RSS of a fresh start with {size()} (MiB)"] = round(
                                proc_status(second.pid, "VmRSS"), 1)
                    finally:
                        second.stop()
                    retries.append(
                        f"{reading_retries(second.pid)}, {entries_of(second.pid, KEPT_WHILE_CHANGING)}")
                    reads.append(read_times(second.pid))
                figures[f"exec to READY=1 with {size()} (ms, median of 3 starts)"] = round(
                    statistics.median(starts) * 1000, 1)
                figures[f"exec to READY=1 with {size()}, each start (ms)"] = " / ".join(
                    f"{start * 1000:.1f}" for start in starts)
                figures["each start's readings failed, kept while the kernel changed them"] = " / ".join(retries)
                figures["each start's reading of rtnetlink / udev, at the same time (ms)"] = ", ".join(reads)
                figures["the three starts: wall / machine's busy CPU / theirs / journald's / udevd's / the main netdevd's (s)"] = (
                    f"{time.monotonic() - starts_began:.2f} / {machine_busy() - machine_before:.2f} / "
                    f"{sum(starts_cpu):.2f} / {sum(proc_stat(p)[0] for p in journald) - journald_before:.2f} / "
                    f"{sum(proc_stat(p)[0] for p in udevd) - udevd_before:.2f} / "
                    f"{proc_stat(daemon.pid)[0] - main_before:.2f}")
                start_under_churn(figures, binary, workdir, empty_hooks, ctl)

            label = "delete" if options.rounds == 1 else f"delete #{round_number}"
            delete = [f"link del {pair_name(i)}a" for i in range(PAIRS)]
            hook_lines0 = sum(1 for _ in open(hook_log))
            profiler = start_profile(options, daemon, label)
            before, returned = burst(figures, label, delete, ctl, daemon, sampler, 0, journald)
            problems = settle_drift(ctl, daemon.socket_path, tentative=False)
            if options.hook_event:
                figures[f"{label}: the hook's runs ended, after ip -batch returned (s)"] = round(
                    wait_for_quiet(hook_log, returned), 2)
                figures[f"{label}: hook runs"] = sum(1 for _ in open(hook_log)) - hook_lines0
            elif not options.no_hooks:
                for event in ("link-removed", "device-removed"):
                    figures[f"{label}: {event} runs"] = lifecycle_runs(hook_log, hook_lines0, event, "nb", 2 * PAIRS)
            time.sleep(2)
            check_monitors(figures, label, monitors, ctl, daemon.socket_path)
            burst_costs(figures, label, before, daemon, journald, sampler, catalog, "RSS after delete", problems, ctl)
            # netdevd trims its heap a quiet second after a burst or a client's last reply (the calls above), and
            # again 6 s later, once libdispatch's threads that worked meanwhile have ended and freed what they kept.
            time.sleep(8)
            figures[f"{label}: RSS after delete and netdevd's second trim, 8 s later, anonymous / file pages (MiB)"] = (
                f"{proc_status(daemon.pid, 'RssAnon'):.1f} / {proc_status(daemon.pid, 'RssFile'):.1f}")
            stop_profile(profiler)
            save_smaps(options.smaps, daemon.pid, label.replace(" #", "-"))
        if options.idle_seconds > 0:
            # Idle again: the bursts' threads, timers and hook supervision must not leave a wake-up behind.
            wakeups, threads = idle(daemon.pid, options.idle_seconds)
            figures[f"idle wake-ups per minute after the bursts (over {options.idle_seconds:g} s)"] = round(wakeups, 1)
        figures["peak RSS of the process (VmHWM, MiB)"] = round(proc_status(daemon.pid, "VmHWM"), 1)
    finally:
        if sampler:
            sampler.stop()
        for monitor in monitors:
            monitor.stop()
        if daemon.process.poll() is not None:
            print(f"netdevd exited early with status {daemon.process.returncode}", file=sys.stderr)
        daemon.stop()
        subprocess.run(["ip", "-batch", "-"], input="".join(
            f"link del {pair_name(i)}a\n" for i in range(PAIRS)), text=True, capture_output=True)
        if not options.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    width = max(len(name) for name in figures)
    for name, value in figures.items():
        print(f"{name:<{width}}  {value}")
    if options.json:
        with open(options.json, "w") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
