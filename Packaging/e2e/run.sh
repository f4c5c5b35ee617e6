#!/bin/bash
# End-to-end test of the netdevd Debian package under a real systemd 252 as PID 1.
#
# Usage: Packaging/e2e/run.sh DEB
#
# Boots the cached bookworm root (Packaging/e2e/rootfs.sh builds it once) with `systemd-nspawn --boot`
# (--volatile=overlay: the cache stays pristine; --private-network: the container's own network namespace),
# installs DEB with dpkg inside, and checks, each printing PASS or FAIL with its figures:
#   a. start: `systemctl start --no-block` is `activating` until READY=1, then `active`; `netdevctl status` works
#   b. links: a veth pair made in the container's netns shows up in `netdevctl links` and in
#      `journalctl -u netdevd -o json` (NETDEVD_IFNAME=), and `journalctl -x` shows the catalog's text;
#      `netdevctl log e2e0` and `netdevctl status e2e0` show those entries through sd-journal, and a user outside
#      the journal's groups is told so
#   c. hooks: hooks in /etc/netdevd/hooks.d (the package's examples, and one that prints its environment) run
#      for link-added, device-added, link-state and online-state (a veth made routable) with the documented
#      NETDEVD_* environment, as root (the hook runner's user); their output is in the journal; a hook in
#      /etc/netdevd/link-state.d runs for link-state alone
#   r. hook runner: a hook (run by netdevd-hooks.service, outside netdevd's sandbox) adds a route in a test
#      namespace, restarts a unit and connects to a TCP listener on loopback; netdevd's exposure stays <= 1.0, with
#      no capability and no IP socket family
#   d. reload: `systemctl reload` ends `active` again and the journal shows the reload; `netdevctl reload`
#      works for root and is refused for others
#   e. watchdog: a SIGSTOPped netdevd is killed by the watchdog (Result=watchdog) and restarted (new MainPID)
#   f. socket activation: with only netdevd.socket listening, `netdevctl status` starts netdevd
#   u. udev source: with udevd running, netdevd monitors udev's events and receives them under its sandbox
#   v. udevd gone: killed while netdevd runs, netdevd says so and follows the kernel's uevents; a start with its
#      stale control socket picks the kernel's uevents
#   h. metrics: a TextfileDirectory= the sandbox forbids gives one warning naming the example drop-in; with that
#      drop-in (/run/netdevd-metrics) netdevd.prom appears (0644), follows a veth, matches `netdevctl metrics`,
#      the exposure does not change, and a stop removes it
#   j. journal upload: systemd-journal-upload in the container sends netdevd's entries to systemd-journal-remote
#      (the host's, on the container's loopback; installed on the host if missing); the remote journal has a
#      link's entry with every field intact
#   x. networkd-dispatcher: Debian's networkd-dispatcher and netdevd (NetworkdDispatcherDirectory=) run the same
#      scripts for one veth's life under systemd-networkd; their runs compare equal (directories, order, arguments,
#      variables) but for listed differences; README's "Replacing networkd-dispatcher" commands leave netdevd alone
#      running them
#   n. noise: no line an operator cannot act on (libdispatch's thread priority, an unreadable sysctl) at any start
#   g. stop and purge: stopping is clean (Result=success, no SIGKILL); `apt-get purge` leaves nothing behind
#      (a listing of / before installing and after purging is compared; no user, unit, /etc/netdevd, /run/netdevd)
# Exits 0 only if every check passed. The container, its cgroups and its mounts are gone afterwards, passed or
# not (the script checks, and fails if something is left; a later run removes what a SIGKILLed run left).
# Needs root; about 10 s, plus about 40 s for rootfs.sh the first time.
#
# Environment: NETDEVD_E2E_ROOT (the root tree, default /var/cache/netdevd-e2e/bookworm), NETDEVD_E2E_KEEP=1
# (keep the work directory with the container's console log and the journal), NETDEVD_E2E_NSPAWN_ARGS (extra
# systemd-nspawn arguments, for debugging only).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: $0 DEB" >&2; exit 2; }
DEB=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (systemd-nspawn, cgroups, nsenter)" >&2; exit 1; }

. "$HERE/container.sh"

# readme_block HEADING: the first ```sh block under README's heading (a line "## HEADING" or "### HEADING"), up to
# its first comment line: the commands an operator is told to type, run as written (sudo is the container's root).
README_MD=$HERE/../../README.md
readme_block() {
    awk -v h="$1" '
        $0 == "## " h || $0 == "### " h { inside = 1; next }
        inside && /^##/ { exit }
        inside && /^```sh$/ { block = 1; next }
        block && (/^```$/ || /^#/) { exit }
        block { print }' "$README_MD"
}
readme_run() { C sh -c 'sudo() { "$@"; }; set -e; '"$(readme_block "$1")"; }
# doc_blocks FILE: the ```sh blocks of a page, each as one line of shell separated by NUL (apt-get's left out: the
# test installs and purges the package itself).
doc_blocks() {
    awk '/^```sh$/ { block = 1; text = ""; next }
         block && /^```$/ { block = 0; if (text !~ /apt-get/) printf "%s%c", text, 0; next }
         block { text = text $0 "\n" }' "$1"
}

# ---- a listing of / (for the purge comparison) ---------------------------------------------------------------
# Type, mode, owner and path of everything, and a checksum of every regular file under /etc and of systemd's
# catalog database, except the places that change by themselves or that the brief excludes: /proc, /sys, /dev,
# the journal, apt's and dpkg's own state and logs, /tmp; and the runtime state systemd keeps per unit it ever
# ran (/run/systemd/{units,propagate,transient,...}), its registry of transient users (dynamic-uid), or per
# boot (/run/agetty.reload, written by getty whenever a network interface appears), and udevd's database
# (/run/udev: the test runs udevd for a while), and networkd's (/run/systemd/netif: check x runs it).
snapshot() {
    C sh -c '
        find / \( -path /proc -o -path /sys -o -path /dev -o -path /tmp -o -path /var/tmp \
                  -o -path /run/systemd/journal -o -path /var/log/journal \
                  -o -path /var/cache/apt -o -path /var/lib/apt -o -path /var/lib/dpkg -o -path /var/cache/debconf \
                  -o -path /var/log/apt -o -path /var/log/dpkg.log -o -path /var/log/alternatives.log \
                  -o -path /run/systemd/units -o -path /run/systemd/propagate -o -path /run/systemd/transient \
                  -o -path /run/systemd/seats -o -path /run/systemd/sessions -o -path /run/systemd/users \
                  -o -path /run/systemd/inaccessible -o -path /run/systemd/incoming -o -path /run/mount \
                  -o -path /run/systemd/dynamic-uid -o -path /run/agetty.reload -o -path /run/udev \
                  -o -path /run/systemd/netif \
                  -o -path /mnt/netdevd-e2e \) -prune -o -printf "%y %m %u:%g %p\n" | sort
        find /etc /var/lib/systemd/catalog -xdev -type f -print0 | sort -z | xargs -0 md5sum
    '
}

# ================================================================================================================
say "snapshot of / before installing"
snapshot > "$WORK/before.txt"
say "$(wc -l < "$WORK/before.txt") entries"

t=$(now)
if C dpkg -i "$PKGFILE" > "$WORK/dpkg-install.log" 2>&1; then
    # The package enables and starts both units (debhelper's postinst): what it prints is what it checks.
    i_states="$(C systemctl is-enabled netdevd.service 2>&1) $(C systemctl is-enabled netdevd.socket 2>&1) $(C systemctl is-active netdevd.service) $(C systemctl is-active netdevd.socket)"
    if [ "$i_states" = "enabled enabled active active" ]; then
        pass "install: dpkg -i $(basename "$DEB") in $(since "$t") s; service and socket enabled and active"
    else
        fail "install: dpkg -i succeeded, but (service enabled, socket enabled, service active, socket active) = ($i_states)"
    fi
else
    indent < "$WORK/dpkg-install.log"
    fail "install: dpkg -i failed"
    exit 1
fi

# ---- a. start: activating until READY=1, then active ------------------------------------------------------------
C systemctl stop netdevd.service 2>/dev/null    # (the package started it; "can still be activated by" warning)
t=$(now)
# One shell in the container polls as fast as systemctl answers, so the short 'activating' phase is seen.
C sh -c 'systemctl start --no-block netdevd.service; i=0
         while [ $i -lt 2000 ]; do s=$(systemctl is-active netdevd.service)
             echo "$(date +%s.%N) $s"; [ "$s" = active ] || [ "$s" = failed ] && break; i=$((i + 1)); done' \
    > "$WORK/a-states.txt" 2>&1
first=$(head -1 "$WORK/a-states.txt" | cut -d' ' -f1)
summary=$(awk -v f="$first" '{ if ($2 != prev) { printf "%s+%.3fs ", $2, $1 - f; prev = $2 } }' "$WORK/a-states.txt")
final=$(tail -1 "$WORK/a-states.txt" | cut -d' ' -f2)
seen_activating=$(grep -c ' activating$' "$WORK/a-states.txt")
exec_us=$(prop netdevd.service ExecMainStartTimestampMonotonic)
active_us=$(prop netdevd.service ActiveEnterTimestampMonotonic)
ready_ms=$(awk -v a="$exec_us" -v b="$active_us" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
type=$(prop netdevd.service Type)
status=$(prop netdevd.service StatusText)
if [ "$final" = active ] && [ "$type" = notify ] && [ "$seen_activating" -gt 0 ] && [ -n "$status" ]; then
    pass "a. start: $summary(activating seen $seen_activating times); exec -> READY=1 $ready_ms ms; Type=$type; STATUS='$status'"
else
    fail "a. start: final '$final', Type=$type, activating seen $seen_activating times, STATUS='$status'; $summary"
    C journalctl -u netdevd.service --no-pager -n 20 | indent
fi
t=$(now)
if C netdevctl status > "$WORK/a-status.txt" 2>&1; then
    pass "a. netdevctl status: exit 0 in $(since "$t") s: $(head -1 "$WORK/a-status.txt")"
else
    rc=$?; indent < "$WORK/a-status.txt"; fail "a. netdevctl status: exit $rc"
fi

# ---- b. a veth pair: netdevctl links, journal fields, catalog ----------------------------------------------------
t=$(now)
nsenter -t "$L" -n ip link add e2e0 type veth peer name e2e1    # the host's ip, in the container's netns
links_seen() { C netdevctl links > "$WORK/b-links.txt" 2>&1 && grep -qw e2e0 "$WORK/b-links.txt" && grep -qw e2e1 "$WORK/b-links.txt"; }
if wait_until 10 links_seen; then
    pass "b. netdevctl links: e2e0 and e2e1 listed $(since "$t") s after 'ip link add': $(grep -w e2e0 "$WORK/b-links.txt" | tr -s ' ')"
else
    indent < "$WORK/b-links.txt"; fail "b. netdevctl links: e2e0/e2e1 not listed after 10 s"
fi
journal_has_e2e0() { C journalctl -u netdevd.service -o json --no-pager NETDEVD_IFNAME=e2e0 > "$WORK/b-journal.json" 2>&1 && [ -s "$WORK/b-journal.json" ]; }
if wait_until 5 journal_has_e2e0; then
    n=$(wc -l < "$WORK/b-journal.json")
    msgs=$(grep -o '"MESSAGE":"[^"]*"' "$WORK/b-journal.json" | cut -d'"' -f4 | paste -sd';' | cut -c1-160)
    pass "b. journal: $n entries of netdevd.service with NETDEVD_IFNAME=e2e0 ($msgs)"
else
    fail "b. journal: no entry with NETDEVD_IFNAME=e2e0"
fi
# The catalog: for each MESSAGE_ID of those entries, the first line of its explanation in the installed catalog
# must appear in `journalctl -x`.
C cat /usr/lib/systemd/catalog/netdevd.catalog > "$WORK/catalog.txt" 2>/dev/null
cat_ok=
for id in $(grep -o '"MESSAGE_ID":"[0-9a-f]*"' "$WORK/b-journal.json" | cut -d'"' -f4 | sort -u); do
    text=$(awk -v id="$id" '$0 == "-- " id { on = 1; body = 0; next } /^-- [0-9a-f]+/ { on = 0 }
                            on && body && NF && $0 !~ /@/ { print; exit } on && !NF { body = 1 }' "$WORK/catalog.txt")
    [ -n "$text" ] || continue
    if C journalctl -x -u netdevd.service --no-pager MESSAGE_ID="$id" NETDEVD_IFNAME=e2e0 | grep -qF -- "$text"; then
        cat_ok="$id: \"$text\""; break
    fi
done
if [ -n "$cat_ok" ]; then
    pass "b. catalog: journalctl -x shows the catalog text for $cat_ok"
else
    fail "b. catalog: no catalog explanation of e2e0's entries in journalctl -x ($(wc -l < "$WORK/catalog.txt") catalog lines installed)"
    C journalctl -x -u netdevd.service --no-pager NETDEVD_IFNAME=e2e0 -n 8 | indent
fi

# netdevctl reads the same entries with sd-journal: log lists at least what journalctl found just before (netdevd's,
# about e2e0), status e2e0 ends with one of them, and a user outside systemd-journal/adm is told which group reads
# them. (Entries about e2e0 may still be arriving: each look is taken after the one it is compared with.)
C netdevctl status e2e0 > "$WORK/b-status.txt" 2>&1; status_rc=$?
n_journal=$(C journalctl -u netdevd.service --no-pager -o cat NETDEVD_IFNAME=e2e0 | wc -l)
C netdevctl log e2e0 > "$WORK/b-log.txt" 2>&1; log_rc=$?
C setpriv --reuid=65534 --regid=65534 --clear-groups netdevctl log e2e0 > "$WORK/b-log-nobody.txt" 2>&1
n_log=$(grep -c ' netdevd\[[0-9]*\]: ' "$WORK/b-log.txt")
last=$(tail -n 1 "$WORK/b-status.txt")
if [ "$log_rc" = 0 ] && [ "$status_rc" = 0 ] && [ "$n_log" -ge 1 ] && [ "$n_log" -ge "$n_journal" ] \
    && grep -qxF -- "$last" "$WORK/b-log.txt" && ! grep -qv ' netdevd\[[0-9]*\]: ' "$WORK/b-log.txt" \
    && grep -q "'systemd-journal' or 'adm' group" "$WORK/b-log-nobody.txt"; then
    pass "b. netdevctl log e2e0: $n_log entries, netdevd's only (journalctl: $n_journal); status e2e0 ends with '${last#*: }'; nobody is told which group reads them"
else
    fail "b. netdevctl log/status e2e0: exit $log_rc/$status_rc, $n_log entries against journalctl's $n_journal"
    indent < "$WORK/b-log.txt" | tail -n 5; indent < "$WORK/b-status.txt" | tail -n 5; indent < "$WORK/b-log-nobody.txt"
fi

# ---- c. hooks ---------------------------------------------------------------------------------------------------
# The package's example hooks, installed as documented (executables only: the examples directory may hold a
# README), plus one that prints its arguments and environment. Hook output lands in the journal under the
# hook's name; the sandbox leaves a hook no file it could write for the test to read.
examples=
made_hooks_d=
C test -d /etc/netdevd/hooks.d || { made_hooks_d=yes; C mkdir -p /etc/netdevd/hooks.d; }
for f in $(C sh -c 'ls /usr/share/doc/netdevd/examples/hooks/ 2>/dev/null'); do
    name=${f%.gz}
    src=/usr/share/doc/netdevd/examples/hooks/$f
    C sh -c "{ if [ '$f' != '$name' ]; then zcat '$src'; else cat '$src'; fi; } > /tmp/e2e-hook" || continue
    if [ "$(C head -c 2 /tmp/e2e-hook)" = '#!' ]; then
        C install -o root -g root -m 0755 /tmp/e2e-hook "/etc/netdevd/hooks.d/$name" && examples="$examples $name"
    fi
    C rm -f /tmp/e2e-hook
done
C sh -c 'cat > /etc/netdevd/hooks.d/99-e2e-env && chmod 0755 /etc/netdevd/hooks.d/99-e2e-env' <<'HOOK'
#!/bin/sh
echo "e2e-hook argv=$1 $2 uid=$(id -u)"
env | grep -E '^(NETDEVD_[A-Z_]*|PATH)=' | grep -v '^NETDEVD_JSON=' | sort
echo "NETDEVD_JSON bytes=$(printf %s "$NETDEVD_JSON" | wc -c)"
HOOK
# A hook of link-state's own directory: it runs for link-state alone.
C mkdir -p /etc/netdevd/link-state.d
C sh -c 'cat > /etc/netdevd/link-state.d/98-e2e-state && chmod 0755 /etc/netdevd/link-state.d/98-e2e-state' <<'HOOK'
#!/bin/sh
echo "e2e-state $1 $2"
HOOK
hooks=$(C ls /etc/netdevd/hooks.d | paste -sd' ')
nhooks=$(echo "$hooks" | wc -w)
say "hooks installed: $hooks (examples shipped:${examples:- none})"
# Runs whose hooks all exited 0 are logged at debug priority: this step runs netdevd with --log-level debug.
C mkdir -p /etc/systemd/system/netdevd.service.d
C sh -c 'cat > /etc/systemd/system/netdevd.service.d/e2e-debug.conf' <<'EOF'
[Service]
ExecStart=
ExecStart=/usr/sbin/netdevd --log-target journal --log-level debug --hook-runner /run/netdevd-hooks.socket
EOF
C systemctl daemon-reload
C systemctl restart netdevd.service
c0=$(mark)
hook_out() { C journalctl -u netdevd.service --no-pager -o cat --since=@"$c0" SYSLOG_IDENTIFIER=99-e2e-env > "$WORK/c-hook.txt" 2>&1; }
# One run's output is one journal entry; block "EVENT SUBJECT" prints that run's lines.
block() { awk -v key="e2e-hook argv=$1 " 'index($0, "e2e-hook argv=") == 1 { on = (index($0, key) == 1) } on' "$WORK/c-hook.txt"; }
has_runs() { hook_out; local r; for r in "$@"; do grep -q "^e2e-hook argv=$r " "$WORK/c-hook.txt" || return 1; done; }
check_env() {    # check_env "EVENT SUBJECT" VAR=PREFIX...: prints what is missing
    local run=$1 v; shift
    block "$run" > "$WORK/c-run.txt"
    for v in "$@"; do grep -q "^$v" "$WORK/c-run.txt" || printf ' %s:%s' "${run%% *}" "$v"; done
}
# Step 1: a new link (ethe2e0, down): link-added and device-added. Step 2: both ends up: link-state, with the
# previous state. Step 3: an address and a default route: routable, and the host online (online-state). One
# step at a time, because a run waiting for its subject takes newer state into it. The name starts with "eth"
# for the shipped example 50-on-routable, which acts on eth*/en* links only.
dev=/sys/devices/virtual/net/ethe2e0
t=$(now)
nsenter -t "$L" -n ip link add ethe2e0 type veth peer name ethe2e1
ifindex=$(nsenter -t "$L" -n cat /sys/class/net/ethe2e0/ifindex 2>/dev/null)
wait_until 10 has_runs "link-added ethe2e0" "device-added $dev"; took1=$(since "$t")
t=$(now)
nsenter -t "$L" -n ip link set ethe2e1 up
nsenter -t "$L" -n ip link set ethe2e0 up
wait_until 10 has_runs "link-state ethe2e0"; took2=$(since "$t")
t=$(now)
nsenter -t "$L" -n ip address add 192.0.2.10/24 dev ethe2e0
nsenter -t "$L" -n ip route add default via 192.0.2.1 dev ethe2e0
routable() { has_runs "online-state host" && block "link-state ethe2e0" | grep -q '^NETDEVD_OPER_STATE=routable'; }
wait_until 10 routable; took3=$(since "$t")
missing=$(check_env "link-added ethe2e0" NETDEVD_EVENT=link-added NETDEVD_IFNAME=ethe2e0 "NETDEVD_IFINDEX=$ifindex" \
              NETDEVD_OPER_STATE= NETDEVD_ADDRESSES= NETDEVD_ONLINE_STATE= PATH= "NETDEVD_JSON bytes=[1-9]")
missing+=$(check_env "link-state ethe2e0" NETDEVD_EVENT=link-state NETDEVD_IFNAME=ethe2e0 NETDEVD_OPER_STATE= \
               NETDEVD_PREV_OPER_STATE= NETDEVD_ONLINE_STATE= NETDEVD_OPER_STATE=routable \
               "NETDEVD_ADDRESSES=.*192.0.2.10/24")
missing+=$(check_env "device-added $dev" NETDEVD_EVENT=device-added "NETDEVD_DEVPATH=$dev" NETDEVD_SUBSYSTEM=net \
               NETDEVD_ONLINE_STATE= "NETDEVD_JSON bytes=[1-9]")
missing+=$(check_env "online-state host" NETDEVD_EVENT=online-state NETDEVD_ONLINE_STATE=online \
               NETDEVD_PREV_ONLINE_STATE=offline)
if [ -z "$missing" ]; then
    uid=$(block "link-added ethe2e0" | sed -n 's/^e2e-hook argv=.* uid=//p' | head -1)
    pass "c. hook 99-e2e-env: link-added + device-added $took1 s after 'ip link add', link-state $took2 s after 'ip link set up', routable + online-state $took3 s after 'ip route add default'; uid $uid; link-added: $(block "link-added ethe2e0" | grep '^NETDEVD_' | paste -sd' '); link-state: $(block "link-state ethe2e0" | grep -E '^NETDEVD_(PREV_)?OPER_STATE' | paste -sd' '); device-added: $(block "device-added $dev" | grep -E '^NETDEVD_(DEVPATH|SUBSYSTEM)' | paste -sd' '); online-state: $(block "online-state host" | grep -E '^NETDEVD_' | paste -sd' ')"
else
    indent < "$WORK/c-hook.txt"; fail "c. hook 99-e2e-env: missing$missing"
fi
# netdevd's account of the runs: link-added ethe2e0 ran every installed hook, no run failed, nothing refused.
C journalctl -u netdevd.service --no-pager -o cat --since=@"$c0" SYSLOG_IDENTIFIER=netdevd > "$WORK/c-daemon.txt"
ran=$(grep -m1 "^Hooks for link-added ethe2e0 ran: $nhooks hooks\?" "$WORK/c-daemon.txt")
failed=$(grep -E '^Hooks for .* failed|refus' "$WORK/c-daemon.txt" | head -5)
example_out=
for h in $examples; do
    lines=$(C journalctl -u netdevd.service --no-pager -o cat --since=@"$c0" SYSLOG_IDENTIFIER="$h" | grep -c .)
    example_out="$example_out example $h: $lines line(s) in the journal"
    case $h in 50-on-routable)    # its documented output for a routable eth* link and the host online
        C journalctl -u netdevd.service --no-pager -o cat --since=@"$c0" SYSLOG_IDENTIFIER="$h" > "$WORK/c-$h.txt"
        if grep -q '^ethe2e0 is routable' "$WORK/c-$h.txt" && grep -q '^host is online' "$WORK/c-$h.txt"; then
            example_out="$example_out ($(paste -sd'|' "$WORK/c-$h.txt"))"
        else
            failed="$failed${failed:+; }example $h did not report ethe2e0 routable and the host online"
        fi ;;
    esac
    example_out="$example_out;"
done
if [ -n "$ran" ] && [ -z "$failed" ]; then
    pass "c. hook runs: '$ran' ($hooks); no failed or refused run;${example_out:- no example hooks shipped}"
else
    echo "$failed" | indent
    fail "c. hook runs: link-added ethe2e0 with all $nhooks hooks: '${ran:-no such entry}'; failures: ${failed:-none}"
fi
C journalctl -u netdevd.service --no-pager -o cat --since=@"$c0" SYSLOG_IDENTIFIER=98-e2e-state > "$WORK/c-state.txt"
if grep -q '^e2e-state link-state ethe2e0$' "$WORK/c-state.txt" && ! grep -qv '^e2e-state link-state ' "$WORK/c-state.txt"; then
    pass "c. link-state.d: 98-e2e-state ran $(grep -c . "$WORK/c-state.txt") times, for link-state only ($(sort -u "$WORK/c-state.txt" | paste -sd'|' -)); link-added ethe2e0 ran the $nhooks of hooks.d"
else
    indent < "$WORK/c-state.txt"; fail "c. link-state.d: 98-e2e-state did not run for link-state alone"
fi
C rm -rf /etc/netdevd/link-state.d
C rm -f /etc/systemd/system/netdevd.service.d/e2e-debug.conf
C systemctl daemon-reload
C systemctl restart netdevd.service

# ---- r. hooks that do their job: the hook runner, outside netdevd's sandbox ------------------------------------
# One hook, from link-state of a veth: adds a route in a test namespace and removes it, restarts a test unit, and
# sends a line over TCP to a listener on loopback (a socket unit with Accept=yes, whose service copies it to the
# journal). netdevd itself keeps its sandbox: exposure <= 1.0, no capability, no IP socket family.
c0=$(mark)
made_netns=
C test -d /run/netns || made_netns=yes
C ip netns add e2e-r
C ip netns exec e2e-r ip link set lo up
C sh -c 'cat > /etc/systemd/system/e2e-target.service' <<'EOF'
[Service]
ExecStart=/bin/sleep infinity
EOF
C sh -c 'cat > /etc/systemd/system/e2e-listen.socket' <<'EOF'
[Socket]
ListenStream=127.0.0.1:7777
Accept=yes
EOF
C sh -c 'cat > /etc/systemd/system/e2e-listen@.service' <<'EOF'
[Service]
ExecStart=/bin/cat
StandardInput=socket
StandardOutput=journal
EOF
C systemctl daemon-reload
C systemctl start e2e-target.service e2e-listen.socket
invocation0=$(prop e2e-target.service InvocationID)
C sh -c 'cat > /etc/netdevd/hooks.d/60-e2e-privileged && chmod 0755 /etc/netdevd/hooks.d/60-e2e-privileged' <<'HOOK'
#!/bin/bash
[ "$1" = link-state ] && [ "$2" = privx0 ] || exit 0
echo "uid=$(id -u) cgroup=$(sed -n "s/^0:://p" /proc/self/cgroup)"
ip netns exec e2e-r ip route add 198.51.100.0/24 dev lo && ip netns exec e2e-r ip route show 198.51.100.0/24 \
    | grep -q . && ip netns exec e2e-r ip route del 198.51.100.0/24 && echo "route: added and removed in e2e-r"
systemctl restart e2e-target.service && echo "restart: e2e-target.service restarted"
{ exec 3<>/dev/tcp/127.0.0.1/7777 && echo "hello from a netdevd hook" >&3 && exec 3>&-; } \
    && echo "tcp: connected to 127.0.0.1:7777"
HOOK
t=$(now)
nsenter -t "$L" -n ip link add privx0 type veth peer name privx1
nsenter -t "$L" -n ip link set privx1 up
nsenter -t "$L" -n ip link set privx0 up
r_out() {
    C journalctl --no-pager -o cat --since=@"$c0" SYSLOG_IDENTIFIER=60-e2e-privileged > "$WORK/r-hook.txt" 2>&1
    grep -q '^tcp: ' "$WORK/r-hook.txt"
}
wait_until 15 r_out; took=$(since "$t")
r_problems=
for line in '^uid=0 cgroup=/system.slice/netdevd-hooks.service' '^route: added and removed' '^restart: ' '^tcp: connected'; do
    grep -q "$line" "$WORK/r-hook.txt" || r_problems="$r_problems missing '$line';"
done
[ "$(prop e2e-target.service InvocationID)" != "$invocation0" ] || r_problems="$r_problems e2e-target.service not restarted;"
C ip netns exec e2e-r ip route show 198.51.100.0/24 | grep -q . && r_problems="$r_problems the route is still there;"
received=$(C journalctl --no-pager -o cat --since=@"$c0" -u 'e2e-listen@*' | grep -c '^hello from a netdevd hook')
[ "$received" -ge 1 ] || r_problems="$r_problems the listener received nothing;"
security=$(C systemd-analyze security netdevd.service 2>&1 | sed -n 's/.*Overall exposure level for netdevd.service: \([0-9.]*\).*/\1/p')
awk -v e="${security:-9}" 'BEGIN { exit !(e <= 1.0) }' || r_problems="$r_problems netdevd's exposure is '${security:-?}';"
main=$(prop netdevd.service MainPID)
caps=$(C sh -c "grep -E '^Cap(Eff|Prm|Bnd|Amb):' /proc/$main/status" | awk '{print $2}' | sort -u | paste -sd,)
[ "$caps" = 0000000000000000 ] || r_problems="$r_problems netdevd's capabilities are $caps;"
families=$(prop netdevd.service RestrictAddressFamilies | tr ' ' '\n' | sort | paste -sd' ')
[ "$families" = "AF_NETLINK AF_UNIX" ] || r_problems="$r_problems netdevd's address families are '$families';"
if [ -z "$r_problems" ]; then
    pass "r. hook runner: a link-state hook ran as root in netdevd-hooks.service, $took s after 'ip link set up': $(grep -v '^uid' "$WORK/r-hook.txt" | paste -sd'|' -); the listener's journal has the hook's line; netdevd: exposure $security, capabilities $caps, address families $families"
else
    indent < "$WORK/r-hook.txt"; fail "r. hook runner:$r_problems"
fi
nsenter -t "$L" -n ip link del privx0
C rm -f /etc/netdevd/hooks.d/60-e2e-privileged
C systemctl stop e2e-target.service e2e-listen.socket
C rm -f /etc/systemd/system/e2e-target.service /etc/systemd/system/e2e-listen.socket /etc/systemd/system/e2e-listen@.service
C systemctl daemon-reload
C ip netns del e2e-r
# ip netns made /run/netns a mount of its own.
[ -n "$made_netns" ] && C sh -c 'umount /run/netns 2>/dev/null; rmdir /run/netns'

# ---- d. reload -----------------------------------------------------------------------------------------------------
c0=$(mark)
pid_before=$(prop netdevd.service MainPID)
t=$(now)
C systemctl reload netdevd.service; rc=$?
took=$(since "$t")
# On 252 `systemctl reload` may return before READY=1 is back: poll ActiveState until it is active again.
C sh -c 'i=0; while [ $i -lt 1000 ]; do s=$(systemctl show -p ActiveState --value netdevd.service)
             echo "$(date +%s.%N) $s"; [ "$s" = active ] && break; i=$((i + 1)); done' > "$WORK/d-states.txt" 2>&1
summary=$(awk -v f="$t" '{ if ($2 != prev) { printf "%s+%.3fs ", $2, $1 - f; prev = $2 } }' "$WORK/d-states.txt")
final=$(prop netdevd.service ActiveState)
reloaded() {
    C journalctl -u netdevd.service --no-pager -o cat --since=@"$c0" > "$WORK/d-journal.txt" 2>&1
    C journalctl -u netdevd.service --no-pager -o cat --since=@"$c0" MESSAGE_ID=4d0b1a6f8e2c4b7e9a31c5d2e7f80a04 > "$WORK/d-own.txt" 2>&1
    grep -q '^Reloaded ' "$WORK/d-journal.txt" && [ -s "$WORK/d-own.txt" ]
}
if [ $rc = 0 ] && wait_until 5 reloaded && [ "$final" = active ] && [ "$(prop netdevd.service MainPID)" = "$pid_before" ]; then
    pass "d. reload: systemctl reload returned after $took s; then $summary; same MainPID $pid_before; journal: $(grep -i 'reload' "$WORK/d-journal.txt" | paste -sd'|')"
else
    indent < "$WORK/d-journal.txt"
    fail "d. reload: systemctl reload exit $rc after $took s, then $summary; final '$final'; netdevd's 'reloaded' entry (MESSAGE_ID ...a04): '$(head -1 "$WORK/d-own.txt")'"
fi

# `netdevctl reload`: allowed for root, refused for anyone else (the peer's uid through SO_PEERCRED, which
# PrivateUsers= must not blur).
c0=$(mark)
C netdevctl reload > "$WORK/d-ctl.txt" 2>&1; rc=$?
own_reloaded() { C journalctl -u netdevd.service --no-pager -o cat --since=@"$c0" MESSAGE_ID=4d0b1a6f8e2c4b7e9a31c5d2e7f80a04 | grep -q .; }
C setpriv --reuid=65534 --regid=65534 --clear-groups netdevctl reload > "$WORK/d-nobody.txt" 2>&1; rc_nobody=$?
if [ $rc = 0 ] && wait_until 5 own_reloaded && [ $rc_nobody != 0 ] && grep -q 'uid 0' "$WORK/d-nobody.txt"; then
    pass "d. netdevctl reload: as root exit 0 and netdevd reloaded; as uid 65534 exit $rc_nobody: $(head -1 "$WORK/d-nobody.txt")"
else
    indent < "$WORK/d-ctl.txt"; indent < "$WORK/d-nobody.txt"
    fail "d. netdevctl reload: as root exit $rc (reloaded entry: $(own_reloaded && echo yes || echo no)); as uid 65534 exit $rc_nobody"
fi

# ---- e. watchdog ----------------------------------------------------------------------------------------------------
C mkdir -p /etc/systemd/system/netdevd.service.d
C sh -c 'cat > /etc/systemd/system/netdevd.service.d/e2e-watchdog.conf' <<'EOF'
[Service]
WatchdogSec=2s
RestartSec=1s
EOF
C systemctl daemon-reload
C systemctl restart netdevd.service
c0=$(mark)
wd=$(prop netdevd.service WatchdogUSec)
pid=$(prop netdevd.service MainPID)
restarts=$(prop netdevd.service NRestarts)
t=$(now)
C sh -c "kill -STOP $pid"
# `systemctl show -p` prints in its own order, not the order asked: sorted "Key=value" pairs instead.
C sh -c 'i=0; while [ $i -lt 3000 ]; do
             l=$(systemctl show -p ActiveState -p Result -p MainPID netdevd.service | sort | paste -sd" ")
             echo "$(date +%s.%N) $l"; i=$((i + 1))
             case "$l" in "ActiveState=active MainPID='"$pid"' "* | *" MainPID=0 "*) ;; "ActiveState=active "*) break ;; esac
         done' > "$WORK/e-states.txt" 2>&1
summary=$(awk 'NR == 1 { f = $1 } { l = $2 "/" $3 "/" $4; gsub(/[A-Za-z]+=/, "", l); if (l != prev) { printf "%s+%.2fs ", l, $1 - f; prev = l } }' "$WORK/e-states.txt")
saw_result=$(grep -c 'Result=watchdog' "$WORK/e-states.txt")
C journalctl -u netdevd.service --no-pager -o cat --since=@"$c0" > "$WORK/e-journal.txt"
timeout_line=$(grep -m1 -i 'watchdog timeout' "$WORK/e-journal.txt")
result_line=$(grep -m1 "Failed with result 'watchdog'" "$WORK/e-journal.txt")
newpid=$(prop netdevd.service MainPID)
if [ "$(prop netdevd.service ActiveState)" = active ] && [ "$newpid" != "$pid" ] && [ "$newpid" != 0 ] \
    && [ -n "$timeout_line" ] && { [ "$saw_result" -gt 0 ] || [ -n "$result_line" ]; }; then
    pass "e. watchdog (WatchdogSec=$wd): SIGSTOP pid $pid -> (ActiveState/MainPID/Result) $summary; '$timeout_line'; '$result_line'; Result=watchdog seen by polling: $([ "$saw_result" -gt 0 ] && echo yes || echo no); NRestarts $restarts -> $(prop netdevd.service NRestarts); new MainPID $newpid; $(since "$t") s"
else
    indent < "$WORK/e-journal.txt"
    fail "e. watchdog: $summary; timeout line '${timeout_line}'; MainPID $pid -> $newpid"
fi
C rm -rf /etc/systemd/system/netdevd.service.d
C systemctl daemon-reload
C systemctl restart netdevd.service

# ---- f. socket activation --------------------------------------------------------------------------------------------
c0=$(mark)
C systemctl stop netdevd.service 2> "$WORK/f-stop.txt"    # warns "can still be activated by netdevd.socket"
sock_state=$(C systemctl is-active netdevd.socket)
svc_state=$(C systemctl is-active netdevd.service)
sock_file=$(C sh -c 'test -S /run/netdevd/io.netdevd && stat -c "%A %U" /run/netdevd/io.netdevd || echo missing')
t=$(now)
C netdevctl status > "$WORK/f-status.txt" 2>&1; rc=$?
took=$(since "$t")
# netdevd answers on the socket as soon as it serves it, possibly before READY=1 (the status then says
# "enumerating"): wait for the service to become active.
svc_active() { [ "$(C systemctl is-active netdevd.service)" = active ]; }
wait_until 10 svc_active
after="$(C systemctl is-active netdevd.service) after $(since "$t") s"
passed=$(C journalctl -u netdevd.service --no-pager -o cat --since=@"$c0" | grep -m1 'socket systemd passed')
if [ "$sock_state" = active ] && [ "$svc_state" = inactive ] && [ $rc = 0 ] && [ "${after%% *}" = active ] &&
    [ -n "$passed" ]; then
    pass "f. socket activation: service $svc_state, socket $sock_state ($sock_file); netdevctl status exit 0 in $took s ('$(head -1 "$WORK/f-status.txt")'); service $after; '$passed'"
else
    indent < "$WORK/f-status.txt"; indent < "$WORK/f-stop.txt"
    fail "f. socket activation: after stop: service $svc_state, socket $sock_state, /run/netdevd/io.netdevd $sock_file; netdevctl status exit $rc; service then $after; journal: '${passed:-no line saying systemd passed the socket}'"
fi

# ---- udev source: the udev monitor under the sandbox (PrivateUsers=yes, DynamicUser=yes) ---------------------------
# The container runs no udevd (its /sys is read-only), so netdevd uses the kernel source above. Here udevd runs as
# a transient unit and netdevd is restarted: it must pick the udev source, and libudev must accept udevd's
# messages (it drops those whose sender is not uid 0), or no device event would arrive at all.
C systemd-run --quiet --unit=e2e-udevd -p Type=notify /lib/systemd/systemd-udevd
C systemctl restart netdevd.service
c0=$(mark)
t=$(now)
nsenter -t "$L" -n ip link add e2eu0 type veth peer name e2eu1
# e2eu0 did not exist when netdevd enumerated at its start, so its device can only have come through the monitor.
# (An interface's own net device is journaled at debug priority, the link's entries saying it: ask netdevctl.)
# ID_NET_DRIVER is set by udevd's net_id builtin: the kernel's uevent does not carry it, so its presence says the
# device came through udevd.
udev_device() {
    C netdevctl device e2eu0 > "$WORK/u-device.txt" 2>&1 && grep -q 'ID_NET_DRIVER=veth' "$WORK/u-device.txt"
}
u_source() {
    source_line=$(C journalctl -u netdevd.service --no-pager -o cat SYSLOG_IDENTIFIER=netdevd |
        grep 'Monitoring udev source' | tail -1)
    echo "$source_line" | grep -q "source 'udev'"
}
if wait_until 10 udev_device && wait_until 10 u_source; then
    pass "u. udev source: '$source_line'; the device of e2eu0 arrived through udevd (ID_NET_DRIVER=veth) $(since "$t") s after 'ip link add' ($(paste -sd' ' "$WORK/u-device.txt" | tr -s ' ' | cut -c1-200))"
else
    fail "u. udev source: '$source_line'; netdevctl did not list e2eu0's device with udevd's ID_NET_DRIVER in 10 s: $(paste -sd' ' "$WORK/u-device.txt" 2>/dev/null)"
fi
nsenter -t "$L" -n ip link del e2eu0

# ---- v. udevd gone: killed while netdevd runs, then a start with its stale control socket ---------------------------
# udevd killed as a crash or an OOM kill would leaves /run/udev/control behind, with nothing listening (this udevd
# runs without systemd's socket units). Link changes with no uevent following make netdevd probe the socket table
# (/proc/self/net/unix, readable under ProcSubset=pid) and, with --udev-source auto, follow the kernel's uevents.
C systemctl kill -s KILL e2e-udevd.service
nsenter -t "$L" -n ip link add e2ev0 type veth peer name e2ev1
t=$(now)
v_device() { C netdevctl device e2ev0 > "$WORK/v-device.txt" 2>&1; }
v_said() {
    C journalctl -u netdevd.service --no-pager -o cat --since=@"$c0" SYSLOG_IDENTIFIER=netdevd > "$WORK/v-journal.txt"
    grep -q "following the kernel's raw uevents" "$WORK/v-journal.txt"
}
if wait_until 20 v_said && wait_until 10 v_device; then
    pass "v. udevd killed: $(grep "following the kernel's raw uevents" "$WORK/v-journal.txt" | cut -c1-160); e2ev0's device tracked $(since "$t") s after 'ip link add'"
else
    indent < "$WORK/v-journal.txt"
    fail "v. udevd killed: netdevd did not say it follows the kernel's uevents, or did not track e2ev0's device: $(paste -sd' ' "$WORK/v-device.txt" 2>/dev/null)"
fi
nsenter -t "$L" -n ip link del e2ev0
stale=$(C ls -l /run/udev/control 2>&1)
c0=$(mark)
C systemctl restart netdevd.service
nsenter -t "$L" -n ip link add e2ev2 type veth peer name e2ev3
v_device() { C netdevctl device e2ev2 > "$WORK/v-device.txt" 2>&1; }
v_source() {
    source_line=$(C journalctl -u netdevd.service --no-pager -o cat --since=@"$c0" SYSLOG_IDENTIFIER=netdevd |
        grep 'Monitoring udev source' | tail -1)
    echo "$source_line" | grep -q "source 'kernel' (auto: udevd is not running, nothing listens on /run/udev/control"
}
if C test -S /run/udev/control && wait_until 10 v_source && wait_until 10 v_device; then
    pass "v. start with a stale /run/udev/control ($stale): '$source_line'; e2ev2's device tracked"
else
    fail "v. start with a stale /run/udev/control ($stale): '${source_line:-}'; e2ev2's device: $(paste -sd' ' "$WORK/v-device.txt" 2>/dev/null)"
fi
nsenter -t "$L" -n ip link del e2ev2
C systemctl stop e2e-udevd.service
C rm -f /run/udev/control
C systemctl restart netdevd.service

# ---- h. metrics under systemd: a clear error where the sandbox forbids the directory; the documented drop-in -----
# A directory of root's, which netdevd's transient user may not write (and ProtectSystem=strict makes read-only):
# one warning naming the example drop-in. Then the drop-in shipped in the package's examples, /run/netdevd-metrics:
# the file appears (0644, netdevd's user), follows a veth's life, `netdevctl metrics` prints the same families,
# the exposure stays where it was, and a stop takes the directory away.
exposure() { C systemd-analyze security netdevd.service 2>/dev/null | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p'; }
h_before=$(exposure)
# The package ships /etc/netdevd/netdevd.conf.d (README's commands write there); the service's drop-in directory
# is made here, as `systemctl edit` would.
C test -d /etc/netdevd/netdevd.conf.d || fail "h. the package did not ship /etc/netdevd/netdevd.conf.d"
C mkdir -p /var/lib/e2e-textfile /etc/systemd/system/netdevd.service.d
C sh -c 'printf "[Metrics]\nTextfileDirectory=/var/lib/e2e-textfile\n" > /etc/netdevd/netdevd.conf.d/e2e-metrics.conf'
c0=$(mark)
# The checks before restarted netdevd often; systemd's start limit (5 in 10 s) would refuse this one.
C systemctl reset-failed netdevd.service netdevd.socket
C systemctl restart netdevd.service
h_refused() { C journalctl -u netdevd.service --no-pager -o cat --since=@"$c0" -p warning | grep -q 'Cannot write the metrics file /var/lib/e2e-textfile/netdevd.prom'; }
if wait_until 10 h_refused; then
    pass "h. metrics refused: $(C journalctl -u netdevd.service --no-pager -o cat --since=@"$c0" -p warning | grep -m1 'Cannot write the metrics file' | cut -c1-160)..."
else
    fail "h. metrics refused: no warning about /var/lib/e2e-textfile within 10 s"
fi
# README's own commands ("Metrics for Prometheus"), as an operator types them, up to the node_exporter link.
C rm -f /etc/netdevd/netdevd.conf.d/e2e-metrics.conf
C systemctl reset-failed netdevd.service netdevd.socket
readme_run "Metrics for Prometheus" > "$WORK/h-readme.txt" 2>&1 || { indent < "$WORK/h-readme.txt"; fail "h. README's metrics commands failed"; }
h_after=$(exposure)
PROM=/run/netdevd-metrics/netdevd.prom
nsenter -t "$L" -n ip link add e2em0 type veth peer name e2em1
t=$(now)
h_has() { C grep -q "$1" "$PROM" 2>/dev/null; }
h_seen=no; wait_until 10 h_has 'netdevd_link_operational_state{link="e2em0",state="off"} 1' && h_seen=$(since "$t")
nsenter -t "$L" -n ip link del e2em0
t=$(now)
h_gone=no; wait_until 10 eval 'C test -f "$PROM" && ! h_has "link=\"e2em0\""' && h_gone=$(since "$t")
h_mode=$(C stat -c '%a %u' "$PROM" 2>/dev/null)
h_uid=$(C awk '/^Uid:/ { print $2 }' "/proc/$(prop netdevd.service MainPID)/status" 2>/dev/null)
h_families=$(C netdevctl metrics 2>/dev/null | grep -c '^# TYPE netdevd_')
h_file_families=$(C grep -c '^# TYPE netdevd_' "$PROM" 2>/dev/null)
C systemctl stop netdevd.service
h_stopped=$(C sh -c 'test -e /run/netdevd-metrics && echo present || echo gone')
if [ "$h_seen" != no ] && [ "$h_gone" != no ] && [ "$h_mode" = "644 $h_uid" ] && [ "${h_families:-0}" -ge 10 ] \
    && [ "${h_file_families:-0}" -ge 10 ] && [ -n "$h_after" ] && [ "$h_after" = "$h_before" ] \
    && awk -v e="$h_after" 'BEGIN { exit !(e <= 2.0) }' && [ "$h_stopped" = gone ]; then
    pass "h. metrics: $PROM (mode and uid $h_mode: netdevd's) had e2em0 after $h_seen s, lost it $h_gone s after its deletion; $h_families families from netdevctl metrics, $h_file_families in the file; exposure $h_before without the drop-in, $h_after with it; at the stop systemd removed /run/netdevd-metrics"
else
    fail "h. metrics: seen $h_seen, gone $h_gone, mode '$h_mode' (netdevd uid $h_uid), families $h_families/$h_file_families, exposure '$h_before' -> '$h_after', after stop $h_stopped"
    C journalctl -u netdevd.service --no-pager -o cat --since=@"$c0" | tail -n 20 | indent
fi
C rm -f /etc/systemd/system/netdevd.service.d/metrics.conf /etc/netdevd/netdevd.conf.d/metrics.conf
C rmdir /var/lib/e2e-textfile
C systemctl daemon-reload
C systemctl reset-failed netdevd.service netdevd.socket
C systemctl start netdevd.service

# ---- j. the journal, uploaded: systemd-journal-upload (the container's, Debian's unit) to systemd-journal-remote ----
# journal-remote is the host's binary, listening on loopback in the container's network namespace and writing to
# a directory of the host: the central journal. A link made in the container is found there by its NETDEVD_IFNAME=,
# with the fields netdevd wrote, as in the container's own journal.
REMOTE_BIN=/lib/systemd/systemd-journal-remote
if [ ! -x "$REMOTE_BIN" ]; then
    apt-get install -y -qq systemd-journal-remote > /dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq systemd-journal-remote > /dev/null 2>&1; }
fi
mkdir -p "$WORK/remote"
nsenter -t "$L" -n "$REMOTE_BIN" --listen-http=127.0.0.1:19532 --output="$WORK/remote/" > "$WORK/j-remote.log" 2>&1 &
REMOTE=$!
C mkdir -p /etc/systemd/journal-upload.conf.d
C sh -c 'printf "[Upload]\nURL=http://127.0.0.1:19532\n" > /etc/systemd/journal-upload.conf.d/e2e.conf'
C systemctl start systemd-journal-upload.service
nsenter -t "$L" -n ip link add e2eup0 type veth peer name e2eup1
t=$(now)
ADDED=4d0b1a6f8e2c4b7e9a31c5d2e7f80a11
j_remote() { journalctl --directory="$WORK/remote" --no-pager -o json NETDEVD_IFNAME=e2eup0 MESSAGE_ID=$ADDED > "$WORK/j-remote.json" 2>/dev/null && [ -s "$WORK/j-remote.json" ]; }
if wait_until 30 j_remote; then
    took=$(since "$t")
    C journalctl --no-pager -o json NETDEVD_IFNAME=e2eup0 MESSAGE_ID=$ADDED > "$WORK/j-local.json" 2>&1
    j_diff=$(python3 - "$WORK/j-local.json" "$WORK/j-remote.json" <<'PY'
import json, sys
local, remote = (json.loads(open(p).readline()) for p in sys.argv[1:3])
keys = sorted(k for k in local if k.startswith("NETDEVD_") or k in ("MESSAGE", "MESSAGE_ID", "PRIORITY",
       "SYSLOG_IDENTIFIER", "_SYSTEMD_UNIT", "_BOOT_ID", "_MACHINE_ID", "__REALTIME_TIMESTAMP"))
print(" ".join(k for k in keys if local.get(k) != remote.get(k)) or "none", "|", len(keys), "|",
      " ".join(k for k in keys if k.startswith("NETDEVD_")))
PY
)
    if [ "${j_diff%% |*}" = none ]; then
        pass "j. journal upload: the link's entry reached systemd-journal-remote after $took s; journalctl --directory=... NETDEVD_IFNAME=e2eup0 finds it with all $(echo "$j_diff" | cut -d'|' -f2 | tr -d ' ') fields as written ($(echo "$j_diff" | cut -d'|' -f3 | sed 's/^ //'))"
    else
        fail "j. journal upload: fields differ between the container's journal and the remote one: ${j_diff%% |*}"
    fi
else
    fail "j. journal upload: nothing for NETDEVD_IFNAME=e2eup0 in the remote journal after 30 s"
    indent < "$WORK/j-remote.log" | tail -n 10
    C journalctl -u systemd-journal-upload.service --no-pager -o cat | tail -n 10 | indent
fi
nsenter -t "$L" -n ip link del e2eup0
C systemctl stop systemd-journal-upload.service
kill "$REMOTE" 2>/dev/null; wait "$REMOTE" 2>/dev/null
# What the upload left (its configuration, its state directory) must not show in the purge's comparison.
C rm -rf /etc/systemd/journal-upload.conf.d /var/lib/private/systemd/journal-upload /var/lib/systemd/journal-upload
for d in /var/lib/private/systemd /var/lib/private; do
    grep -q " $d\$" "$WORK/before.txt" || C rmdir "$d" 2>/dev/null
done

# ---- k. configuration, as an operator meets it: README's commands, a typo, a file that cannot be read ---------------
C systemctl reset-failed netdevd.service netdevd.socket
pid_before=$(prop netdevd.service MainPID)
readme_run "Configure" > "$WORK/k-readme.txt" 2>&1; k_readme=$?
C rm -f /etc/netdevd/netdevd.conf.d/50-local.conf
# A misspelt key: netdevd --check-config fails naming it; a restart runs with one warning; reload prints it.
C sh -c 'printf "[Online]\nRequiredInterface=eth0\n" > /etc/netdevd/netdevd.conf.d/60-typo.conf'
C netdevd --check-config > "$WORK/k-check.txt" 2>&1; k_check=$?
c0=$(mark)
C systemctl restart netdevd.service; k_restart=$(C systemctl is-active netdevd.service)
k_warned() { [ "$(C journalctl -u netdevd.service --no-pager -o cat --since=@"$c0" -p warning | grep -c "did you mean 'RequiredInterfaces'")" = 1 ]; }
wait_until 5 k_warned; k_warnings=$(C journalctl -u netdevd.service --no-pager -o cat --since=@"$c0" -p warning | grep -c "did you mean 'RequiredInterfaces'")
C netdevctl reload > "$WORK/k-reload-typo.txt" 2>&1; k_reload_typo=$?
C rm -f /etc/netdevd/netdevd.conf.d/60-typo.conf
# A file that is not text: reload and systemctl reload fail with the reason; the daemon keeps running, same pid.
pid_mid=$(prop netdevd.service MainPID)
C sh -c 'printf "\377\376\n" > /etc/netdevd/netdevd.conf.d/70-binary.conf'
C netdevctl reload > "$WORK/k-reload-bad.txt" 2>&1; k_reload_bad=$?
C systemctl reload netdevd.service > "$WORK/k-sysreload-bad.txt" 2>&1; k_sysreload_bad=$?
k_state="$(C systemctl is-active netdevd.service) pid $(prop netdevd.service MainPID)"
# The same file at a start: exit 78, no restart loop, the socket stays; fixed, a plain start works.
C systemctl restart netdevd.service 2> /dev/null
k_fatal="$(prop netdevd.service ExecMainStatus) $(prop netdevd.service NRestarts) $(C systemctl is-active netdevd.socket)"
C rm -f /etc/netdevd/netdevd.conf.d/70-binary.conf
C systemctl start netdevd.service; k_fixed=$(C systemctl is-active netdevd.service)
if [ $k_readme = 0 ] && grep -q 'no problems' "$WORK/k-readme.txt" && [ $k_check = 1 ] &&
    grep -q "did you mean 'RequiredInterfaces'" "$WORK/k-check.txt" && [ "$k_restart" = active ] && [ "$k_warnings" = 1 ] &&
    [ $k_reload_typo = 0 ] && grep -q "RequiredInterface" "$WORK/k-reload-typo.txt" && [ $k_reload_bad = 1 ] &&
    grep -q "not UTF-8" "$WORK/k-reload-bad.txt" && [ $k_sysreload_bad != 0 ] && [ "$k_state" = "active pid $pid_mid" ] &&
    [ "$k_fatal" = "78 0 active" ] && [ "$k_fixed" = active ]; then
    pass "k. configuration: README's Configure commands ran ('$(grep -m1 'no problems' "$WORK/k-readme.txt")'); a misspelt key: --check-config exit 1 ('$(head -1 "$WORK/k-check.txt" | cut -c1-120)'), restart $k_restart with $k_warnings warning, netdevctl reload exit 0 printing it; a file not UTF-8: netdevctl reload exit 1 ('$(tail -1 "$WORK/k-reload-bad.txt" | tr -s ' ' | cut -c1-100)'), systemctl reload exit $k_sysreload_bad, netdevd still $k_state; at a start: (status, restarts, socket) $k_fatal, fixed: $k_fixed without reset-failed"
else
    for f in k-readme k-check k-reload-typo k-reload-bad k-sysreload-bad; do echo "  $f:"; indent < "$WORK/$f.txt"; done
    fail "k. configuration: README exit $k_readme, check-config exit $k_check, restart '$k_restart' with $k_warnings warnings, reload of a typo exit $k_reload_typo, of a binary file exit $k_reload_bad, systemctl reload exit $k_sysreload_bad, then '$k_state' (was pid $pid_mid); at a start (status, restarts, socket) '$k_fatal', fixed '$k_fixed'"
fi

# ---- w. netdevd-wait-online.service holds network-online.target until netdevd says a veth is routable -----------------
# Enabled with a drop-in naming the link, as README and the unit's own comment say; a unit ordered after
# network-online.target records what netdevctl says of the link when it starts.
C mkdir -p /etc/systemd/system/netdevd-wait-online.service.d
C sh -c 'printf "[Service]\nExecStart=\nExecStart=/usr/bin/netdevctl wait-online --interface e2ew0:routable --timeout 60s\n" > /etc/systemd/system/netdevd-wait-online.service.d/e2e.conf'
C sh -c 'printf "[Unit]\nWants=network-online.target\nAfter=network-online.target\n[Service]\nType=oneshot\nExecStart=/bin/sh -c \"netdevctl link e2ew0 > /run/e2e-after-online.txt 2>&1\"\n" > /etc/systemd/system/e2e-after-online.service'
C systemctl enable netdevd-wait-online.service > "$WORK/w-enable.txt" 2>&1
C systemctl daemon-reload
C systemctl stop network-online.target 2> /dev/null    # reached at boot or not: started afresh here
c0=$(mark)
C systemctl start --no-block e2e-after-online.service
w_waiting() { [ "$(C systemctl is-active netdevd-wait-online.service)" = activating ]; }
wait_until 10 w_waiting
w_before="wait-online $(C systemctl is-active netdevd-wait-online.service), after-online $(C systemctl is-active e2e-after-online.service), $(C sh -c 'test -e /run/e2e-after-online.txt && echo ran || echo not run')"
t=$(now)
nsenter -t "$L" -n ip link add e2ew0 type veth peer name e2ew1
nsenter -t "$L" -n ip link set e2ew1 up
nsenter -t "$L" -n ip link set e2ew0 up
nsenter -t "$L" -n ip addr add 198.51.100.77/24 dev e2ew0
w_ran() { C cat /run/e2e-after-online.txt > "$WORK/w-after.txt" 2>/dev/null && [ -s "$WORK/w-after.txt" ]; }
w_line=
if wait_until 30 w_ran; then
    w_took=$(since "$t")
    w_line=$(C journalctl -u netdevd-wait-online.service --no-pager -o cat --since=@"$c0" | grep -m1 'Online after')
fi
if [ "$w_before" = "wait-online activating, after-online inactive, not run" ] && grep -q routable "$WORK/w-after.txt" 2>/dev/null &&
    echo "$w_line" | grep -q 'e2ew0 routable'; then
    pass "w. wait-online: before the link, $w_before; the unit after network-online.target ran $w_took s after 'ip link add' and saw '$(grep -m1 'Operational' "$WORK/w-after.txt" | tr -s ' ')'; journal: '$w_line'"
else
    indent < "$WORK/w-enable.txt"; indent < "$WORK/w-after.txt" 2>/dev/null
    C journalctl -u netdevd-wait-online.service --no-pager -o cat --since=@"$c0" | tail -n 5 | indent
    fail "w. wait-online: before the link: $w_before; after: '$(paste -sd' ' "$WORK/w-after.txt" 2>/dev/null)'; journal: '${w_line:-no Online line}'"
fi
C systemctl disable netdevd-wait-online.service > /dev/null 2>&1
C systemctl stop netdevd-wait-online.service e2e-after-online.service
C rm -rf /etc/systemd/system/netdevd-wait-online.service.d /etc/systemd/system/e2e-after-online.service /run/e2e-after-online.txt
grep -q " /etc/systemd/system/network-online.target.wants\$" "$WORK/before.txt" ||
    C rmdir /etc/systemd/system/network-online.target.wants 2>/dev/null
C systemctl daemon-reload
nsenter -t "$L" -n ip link del e2ew0

# ---- q. the first hour: docs/first-hour.md's commands, as a new operator types them, and what they print ------------
FIRST_HOUR=$HERE/../../docs/first-hour.md
q_n=0; q_failed=
while IFS= read -r -d '' commands; do
    q_n=$((q_n + 1))
    C sh -c 'sudo() { "$@"; }; set -e; '"$commands" > "$WORK/q-$q_n.txt" 2>&1 || q_failed="$q_failed $q_n"
done < <(doc_blocks "$FIRST_HOUR")
q_all=$(cat "$WORK"/q-*.txt)
if [ "$q_n" -ge 5 ] && [ -z "$q_failed" ] && grep -q '^demo0: added, off$' <<<"$q_all" &&
    grep -q '^Online after .*: demo0 (needs carrier): demo0 carrier$' <<<"$q_all" &&
    grep -q '^demo0 is now carrier (was [a-z-]*)$' <<<"$q_all" && grep -q '^enabled$' <<<"$q_all" &&
    grep -q '^2 links listed.$' <<<"$q_all"; then
    pass "q. first hour: $q_n blocks of docs/first-hour.md ran; '$(grep -m1 '^Online after' <<<"$q_all")'; the hook said '$(grep -m1 '^demo0 is now' <<<"$q_all")'"
else
    for f in "$WORK"/q-*.txt; do echo "  $(basename "$f"):"; indent < "$f"; done
    fail "q. first hour: $q_n blocks, failed:${q_failed:- none}; an expected line is missing (see above)"
fi
C sh -c 'systemctl disable netdevd-wait-online.service; rm -f /etc/netdevd/hooks.d/50-log-state' > /dev/null 2>&1
grep -q " /etc/systemd/system/network-online.target.wants\$" "$WORK/before.txt" ||
    C rmdir /etc/systemd/system/network-online.target.wants 2>/dev/null
nsenter -t "$L" -n ip link del demo0 2>/dev/null

# ---- x. networkd-dispatcher, drop-in: the same scripts under Debian's networkd-dispatcher and under netdevd -------
# systemd-networkd runs (no .network file: every link unmanaged) with Debian's networkd-dispatcher (its unit's
# --run-startup-triggers) and netdevd (NetworkdDispatcherDirectory= the same two directories) side by side. One script
# in off.d, no-carrier.d, carrier.d, degraded.d, routable.d and linger.d records each run (which daemon ran it, by its
# parent's name; the directory, arguments, environment), and in the administrative states' pending.d, initialized.d,
# configuring.d, configured.d and unmanaged.d. One link (a veth whose peer is in a namespace of the test's
# own) is created, raised, gets carrier, an address, a default route, loses carrier, and is deleted; the two records
# are compared run by run: same directories in the same order per link, same arguments and variables, except what
# is listed with its reason. Then README's "Replacing networkd-dispatcher" commands run, and a second link shows the
# scripts running under netdevd alone.
x0=$(mark)
x_dirs="off no-carrier carrier degraded routable linger pending initialized configuring configured unmanaged"
command -v python3 > /dev/null || fail "x. networkd-dispatcher: python3 is needed on the host to compare the records"
for d in $x_dirs; do C mkdir -p "/etc/networkd-dispatcher/$d.d"; done
C sh -c 'cat > /tmp/e2e-nd-dump && install -o root -g root -m 0755 /tmp/e2e-nd-dump /etc/networkd-dispatcher/off.d/50-e2e-dump && rm /tmp/e2e-nd-dump' <<'HOOK'
#!/bin/sh
who=$(cat /proc/$PPID/comm)
case "$who" in netdevd*) who=netdevd ;; networkd-dispat*) who=networkd-dispatcher ;; esac
out=$(mktemp)
{
    echo "=== $(basename "$(dirname "$0")") $IFACE"
    echo "argc=$#"
    echo "names=$(env | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p' | sort | paste -sd' ')"
    env | grep -E '^(ADDR|ESSID|IP_ADDRS|IP6_ADDRS|IFACE|STATE|AdministrativeState|OperationalState|json)=' | sort
} > "$out"
mkdir -p /run/e2e-nd
cat "$out" >> "/run/e2e-nd/$who.txt"
rm -f "$out"
HOOK
for d in $x_dirs; do
    [ "$d" = off ] || C ln -sf ../off.d/50-e2e-dump "/etc/networkd-dispatcher/$d.d/50-e2e-dump"
done
C sh -c 'cat > /etc/netdevd/netdevd.conf.d/e2e-nd.conf' <<'EOF'
[Hooks]
NetworkdDispatcherDirectory=/etc/networkd-dispatcher
NetworkdDispatcherDirectory=/usr/lib/networkd-dispatcher
EOF
C systemctl start systemd-networkd.service
C systemctl restart networkd-dispatcher.service netdevd.service
x_peer_ns() { unshare --net sleep 600 & X_PEER=$!; sleep 0.2; }
x_peer_ns
# x_wait DIR IFACE N: both daemons' records have at least N runs of DIR.d for IFACE (20 s at most)
x_wait() {
    wait_until 20 sh -c "[ \"\$(nsenter -t $L -a grep -c '^=== $1.d $2\$' /run/e2e-nd/netdevd.txt 2>/dev/null)\" -ge $3 ] && [ \"\$(nsenter -t $L -a grep -c '^=== $1.d $2\$' /run/e2e-nd/networkd-dispatcher.txt 2>/dev/null)\" -ge $3 ]" || say "x: waited 20 s for $3 run(s) of $1.d for $2"
}
x_wait carrier lo 1
nsenter -t "$L" -n ip link add ndx0 type veth peer name ndx1 netns "$X_PEER"
x_wait off ndx0 1
nsenter -t "$L" -n ip link set ndx0 up
x_wait no-carrier ndx0 1
nsenter -t "$X_PEER" -n ip link set ndx1 up
x_wait degraded ndx0 1
nsenter -t "$L" -n ip addr add 192.0.2.5/24 dev ndx0
x_wait routable ndx0 1
nsenter -t "$L" -n ip route add default via 192.0.2.1 dev ndx0
sleep 1.5
nsenter -t "$X_PEER" -n ip link set ndx1 down
x_wait no-carrier ndx0 2
nsenter -t "$L" -n ip link del ndx0
x_wait linger ndx0 1
sleep 1.5
C cat /run/e2e-nd/netdevd.txt > "$WORK/x-netdevd.txt" 2>/dev/null
C cat /run/e2e-nd/networkd-dispatcher.txt > "$WORK/x-networkd-dispatcher.txt" 2>/dev/null
C journalctl -u networkd-dispatcher.service --no-pager -o cat -p warning > "$WORK/x-nd-journal.txt" 2>&1
python3 - "$WORK/x-netdevd.txt" "$WORK/x-networkd-dispatcher.txt" > "$WORK/x-compare.txt" 2>&1 <<'PYEOF'
import re, sys, json
def runs(path):
    out = []
    for block in open(path).read().split("=== ")[1:]:
        lines = block.strip("\n").split("\n")
        directory, iface = lines[0].split(" ", 1)
        values = {}
        for line in lines[1:]:
            name, _, value = line.partition("=")
            values[name] = value
        out.append((directory, iface, values))
    return out
ours, theirs = runs(sys.argv[1]), runs(sys.argv[2])
problems, notes, compared = [], set(), 0
late_fields, status_only, service_env = {}, set(), set()
for iface in ["lo", "ndx0"]:
    a = [r for r in ours if r[1] == iface]
    b = [r for r in theirs if r[1] == iface]
    sa, sb = [r[0] for r in a], [r[0] for r in b]
    print(f"{iface}: netdevd {' '.join(sa)}")
    print(f"{iface}: networkd-dispatcher {' '.join(sb)}")
    if sa != sb:
        problems.append(f"{iface}: directories differ")
        continue
    for i, ((d, _, va), (_, _, vb)) in enumerate(zip(a, b)):
        # networkd-dispatcher reads a link's addresses (networkctl status) when the script starts, netdevd gives them
        # as they were when the link entered the state: where the link changed in between (an IPv6 link-local address
        # added just after carrier, a link deleted just after it went down), networkd-dispatcher's value is the one
        # netdevd gives the link's next run.
        later_json = json.loads(a[i + 1][2]["json"]) if i + 1 < len(a) else None
        def read_later(name, value, key=None):
            if i + 1 >= len(a):
                return False
            if key is not None:
                return later_json.get(key) == value
            return a[i + 1][2].get(name) == value
        for name in sorted(set(va) | set(vb)):
            if name in ("names", "json"):
                continue
            if va.get(name) != vb.get(name):
                if name in ("ADDR", "IP_ADDRS", "IP6_ADDRS") and read_later(name, vb.get(name)):
                    late_fields.setdefault(f"{iface} {d}", []).append(name)
                    continue
                problems.append(f"{iface} {d} #{i}: {name} netdevd {va.get(name)!r}, networkd-dispatcher {vb.get(name)!r}")
        only = set(vb["names"].split()) - set(va["names"].split())
        extra = set(va["names"].split()) - set(vb["names"].split())
        if extra:
            problems.append(f"{iface} {d} #{i}: variables only netdevd gives: {sorted(extra)}")
        service_env |= only
        ja, jb = json.loads(va["json"]), json.loads(vb["json"])
        for key in sorted(set(ja) | set(jb)):
            ours_key = key in ja or key in ("AdministrativeState", "InterfaceName", "OperationalState", "State", "Type", "Address", "Gateway", "Hardware Address", "Kind")
            if ja.get(key) != jb.get(key) and ours_key and key in ("Address", "Gateway", "Hardware Address", "Kind") and read_later(None, jb.get(key), key):
                late_fields.setdefault(f"{iface} {d}", []).append("json " + key)
            elif key in ja and key in jb:
                if ja[key] != jb[key]:
                    problems.append(f"{iface} {d} #{i}: json {key} netdevd {ja[key]!r}, networkd-dispatcher {jb[key]!r}")
            elif key in ja:
                problems.append(f"{iface} {d} #{i}: json {key} only netdevd's")
            elif ours_key:
                problems.append(f"{iface} {d} #{i}: json {key} only networkd-dispatcher's")
            elif re.match(r"^[A-Z][a-z]{2} [ 0-9]\d ", key):
                status_only.add("its journal lines")
            else:
                status_only.add(key)
        if va.get("argc") != "0":
            problems.append(f"{iface} {d} #{i}: argc {va.get('argc')}")
        compared += 1
print(f"compared {compared} runs")
if late_fields:
    notes.add("networkd-dispatcher read the link later, after it changed again (the value netdevd gives the next run): "
              + ", ".join(f"{run} {' '.join(fields)}" for run, fields in late_fields.items()))
if status_only:
    notes.add("networkctl status lines netdevd does not give in json: " + ", ".join(sorted(status_only)))
if service_env:
    notes.add("networkd-dispatcher's service environment: " + " ".join(sorted(service_env)))
for note in sorted(notes):
    print("listed:", note)
for problem in problems:
    print("DIFFERS:", problem)
sys.exit(1 if problems or compared < 8 else 0)
PYEOF
x_rc=$?
x_nd_warnings=$(grep -c . "$WORK/x-nd-journal.txt")
# netdevd alone: README's commands, then a second link.
readme_run "Replacing networkd-dispatcher" > "$WORK/x-readme.txt" 2>&1; x_readme=$?
x_nd_state=$(C systemctl is-active networkd-dispatcher.service)
x_wait_ours() { wait_until 20 sh -c "nsenter -t $L -a grep -q '^=== $1.d $2\$' /run/e2e-nd/netdevd.txt"; }
x_wait_ours carrier lo
nsenter -t "$L" -n ip link add ndx2 type veth peer name ndx3 netns "$X_PEER"
nsenter -t "$L" -n ip link set ndx2 up
nsenter -t "$X_PEER" -n ip link set ndx3 up
nsenter -t "$L" -n ip addr add 192.0.2.6/24 dev ndx2
x_wait_ours routable ndx2; x_alone=$?
x_alone_runs=$(C sh -c "grep '^=== .* ndx2\$' /run/e2e-nd/netdevd.txt" | awk '{print $2}' | paste -sd' ')
x_nd_ndx2=$(C sh -c "grep -c '^=== .* ndx2\$' /run/e2e-nd/networkd-dispatcher.txt" 2>/dev/null)
nsenter -t "$L" -n ip link del ndx2
x_errors=$(C journalctl -u netdevd.service -u netdevd-hooks.service --no-pager -o cat -p warning --since=@"$x0" | grep -c 'networkd-dispatcher\|50-e2e-dump')
if [ $x_rc = 0 ] && [ $x_readme = 0 ] && [ "$x_nd_state" != active ] && [ $x_alone = 0 ] && [ "${x_nd_ndx2:-0}" = 0 ] && [ "$x_errors" = 0 ]; then
    pass "x. networkd-dispatcher: $(grep -m1 '^compared' "$WORK/x-compare.txt"), same directories in the same order ($(grep '^ndx0: netdevd' "$WORK/x-compare.txt" | cut -d' ' -f3-)), same arguments and variables; listed: $(grep '^listed:' "$WORK/x-compare.txt" | cut -c9- | paste -sd';'); networkd-dispatcher logged $x_nd_warnings warnings or errors, netdevd $x_errors; README's commands: networkd-dispatcher $x_nd_state, ndx2 ran $x_alone_runs under netdevd alone"
else
    indent < "$WORK/x-compare.txt"; indent < "$WORK/x-readme.txt"
    fail "x. networkd-dispatcher: compare exit $x_rc; README's commands exit $x_readme (networkd-dispatcher $x_nd_state); netdevd alone: ndx2 ran '$x_alone_runs' (networkd-dispatcher ran $x_nd_ndx2); $x_errors warnings of netdevd about the scripts"
fi
kill "$X_PEER" 2>/dev/null; wait "$X_PEER" 2>/dev/null
C systemctl stop systemd-networkd.service systemd-networkd.socket > /dev/null 2>&1
C systemctl enable networkd-dispatcher.service > /dev/null 2>&1
C sh -c 'rm -f /etc/netdevd/netdevd.conf.d/e2e-nd.conf /etc/netdevd/netdevd.conf.d/networkd-dispatcher.conf; rm -rf /run/e2e-nd; for d in '"$x_dirs"'; do rm -f /etc/networkd-dispatcher/$d.d/50-e2e-dump; done; for d in linger pending initialized configuring configured unmanaged; do rmdir /etc/networkd-dispatcher/$d.d; done'
C systemctl restart netdevd.service

# ---- n. noise: no line an operator cannot act on, over every start above ------------------------------------------
# Seen before: libdispatch's "Failed to set thread priority for worker thread ... errno=13" (the thread that serves
# Dispatch sources asks for nice -4, refused without CAP_SYS_NICE; the unit's LimitNICE=-4 allows it) and
# "net.core.rmem_max=?" (the sysctl is unreadable under ProcSubset=pid), at every start. LimitNICE= needs systemd to
# hold CAP_SYS_RESOURCE; a container without it (as on this project's build machine) keeps RLIMIT_NICE at 0, and
# there the priority line cannot go away: it is then skipped with that reason, the other lines still checked.
C journalctl -u netdevd.service --no-pager -o cat > "$WORK/n-journal.txt" 2>&1
starts=$(grep -c '^netdevd started' "$WORK/n-journal.txt")
nice_limit=$(C cat "/proc/$(prop netdevd.service MainPID)/limits" 2>/dev/null | awk '/^Max nice priority/ { print $4 }')
bounding=$(C awk '/^CapBnd:/ { print $2 }' /proc/1/status)
patterns='rmem_max=\?|BUG in libdispatch'
if [ -n "$bounding" ] && (( (16#$bounding >> 24) & 1 )); then
    patterns="Failed to set thread priority|$patterns"    # CAP_SYS_RESOURCE (bit 24): LimitNICE=-4 must apply
else
    RESULTS+=("SKIP n. libdispatch's thread-priority line: the container's PID 1 has no CAP_SYS_RESOURCE (CapBnd ${bounding:-unreadable}), so LimitNICE=-4 cannot apply (netdevd's RLIMIT_NICE: ${nice_limit:-unreadable})")
    echo "${RESULTS[-1]}"
fi
noise=$(grep -E "$patterns" "$WORK/n-journal.txt" | head -3)
if [ "$starts" -ge 3 ] && [ -z "$noise" ]; then
    pass "n. noise: $starts starts, $(wc -l < "$WORK/n-journal.txt") lines of netdevd.service: none matches '$patterns'"
else
    fail "n. noise: $starts starts (RLIMIT_NICE ${nice_limit:-unreadable}); $noise"
fi

# ---- g. clean stop, purge leaves nothing ------------------------------------------------------------------------------
c0=$(mark)
invocation=$(prop netdevd.service InvocationID)
t=$(now)
C systemctl stop netdevd.socket netdevd.service
took=$(since "$t")
result=$(prop netdevd.service Result); code=$(prop netdevd.service ExecMainCode); st=$(prop netdevd.service ExecMainStatus)
rundir=$(C sh -c 'if [ -e /run/netdevd ]; then ls -A /run/netdevd | paste -sd" "; echo present; else echo gone; fi' | tail -1)
C journalctl --no-pager -o cat --since=@"$c0" _SYSTEMD_INVOCATION_ID="$invocation" + UNIT=netdevd.service + _SYSTEMD_UNIT=netdevd.service > "$WORK/g-journal.txt" 2>&1
killed=$(grep -i -E 'SIGKILL|timed out|Killing process' "$WORK/g-journal.txt" | head -3)
# ExecMainCode 1 = CLD_EXITED
if [ "$result" = success ] && [ "$code" = 1 ] && [ "$st" = 0 ] && [ -z "$killed" ] && [ "$rundir" = gone ]; then
    pass "g. stop: $took s, Result=$result, main process exited with status $st, no SIGKILL, /run/netdevd gone with the socket; journal: $(grep -E 'Stopp|stopp' "$WORK/g-journal.txt" | paste -sd'|' | cut -c1-200)"
else
    indent < "$WORK/g-journal.txt"
    fail "g. stop: Result=$result ExecMainCode=$code ExecMainStatus=$st; /run/netdevd $rundir; ${killed:-}"
fi
# netdevd's last entry, 'stopped' (MESSAGE_ID ...a03): netdevd drains its journal queue before it exits, so the
# entry must be there (journald may take a moment to store it).
for _ in $(seq 1 20); do
    grep -q '^netdevd stopped' "$WORK/g-journal.txt" && break
    sleep 0.1
    C journalctl --no-pager -o cat --since=@"$c0" _SYSTEMD_INVOCATION_ID="$invocation" + UNIT=netdevd.service \
        + _SYSTEMD_UNIT=netdevd.service > "$WORK/g-journal.txt" 2>&1
done
if grep -q '^netdevd stopped' "$WORK/g-journal.txt"; then
    pass "g. last entry: 'netdevd stopped' reached the journal before the process ended"
else
    fail "g. last entry: 'netdevd stopped' is missing from the journal (lost in a queue at exit)"
fi
# The test's own files go first (an administrator's files are not the package's to remove), then the purge.
for f in 99-e2e-env $examples; do C rm -f "/etc/netdevd/hooks.d/$f"; done
[ -n "$made_hooks_d" ] && C rmdir /etc/netdevd/hooks.d /etc/netdevd 2>/dev/null
nsenter -t "$L" -n ip link del e2e0; nsenter -t "$L" -n ip link del ethe2e0
t=$(now)
if C env DEBIAN_FRONTEND=noninteractive apt-get purge -y netdevd > "$WORK/g-purge.log" 2>&1; then
    say "apt-get purge -y netdevd: $(since "$t") s"
else
    indent < "$WORK/g-purge.log"; fail "g. purge: apt-get purge failed"
fi
snapshot > "$WORK/after.txt"
diff -u "$WORK/before.txt" "$WORK/after.txt" | grep -E '^[-+][^-+]' > "$WORK/g-diff.txt"
leftovers=()
[ -s "$WORK/g-diff.txt" ] && leftovers+=("listing of / differs in $(wc -l < "$WORK/g-diff.txt") lines")
C getent passwd netdevd > /dev/null && leftovers+=("user netdevd")
C getent group netdevd > /dev/null && leftovers+=("group netdevd")
units=$(C systemctl list-unit-files --no-legend 'netdevd*' | paste -sd' ')
[ -n "$units" ] && leftovers+=("unit files: $units")
loaded=$(C systemctl list-units --all --no-legend 'netdevd*' | paste -sd' ')
[ -n "$loaded" ] && leftovers+=("units loaded: $loaded")
C test -e /etc/netdevd && leftovers+=("/etc/netdevd")
C test -e /run/netdevd && leftovers+=("/run/netdevd: $(C ls -la /run/netdevd | tail -n +2 | paste -sd' ')")
C sh -c 'ls /var/lib/systemd/deb-systemd-helper-enabled /var/lib/systemd/deb-systemd-helper-masked 2>/dev/null' | grep -q netdevd \
    && leftovers+=("deb-systemd-helper state")
if [ ${#leftovers[@]} = 0 ]; then
    pass "g. purge: nothing left ($(wc -l < "$WORK/after.txt") entries of / identical before install and after purge; no netdevd user/group, unit, /etc/netdevd, /run/netdevd)"
else
    indent < "$WORK/g-diff.txt"
    fail "g. purge: left behind: $(printf '%s; ' "${leftovers[@]}")"
fi

# ---- what netdevd itself complained about over the whole run (information, e.g. what the sandbox refused) --------
C journalctl --no-pager -o cat -p warning _SYSTEMD_UNIT=netdevd.service > "$WORK/warnings.txt" 2>&1
echo "INFO netdevd's entries at priority warning or higher during the run: $(grep -c . "$WORK/warnings.txt")"
sort "$WORK/warnings.txt" | uniq -c | sort -rn | head -10 | indent

# ---- summary -------------------------------------------------------------------------------------------------------
C journalctl --no-pager -o short-monotonic > "$WORK/journal.txt" 2>&1
echo
echo "== summary ($(since "$T0") s)"
printf '%s\n' "${RESULTS[@]}" | cut -c1-140
# Every check this script declares (one `pass` each) must have passed: a check skipped by an early exit or a
# condition counts against it.
declared=$(grep -cE '^\s*pass "' "$HERE/$(basename "$0")")
passed=$(printf '%s\n' "${RESULTS[@]}" | grep -c '^PASS')
tally="$passed checks passed of $declared declared"
echo "end-to-end: $tally"
[ -z "${E2E_TALLY:-}" ] || echo "$tally" > "$E2E_TALLY"
[ "$passed" = "$declared" ] || FAILED=1
exit $FAILED
