#!/bin/bash
# Hook dispatchers side by side under systemd 252 (a container booted as the end-to-end test boots it), with
# systemd-networkd running in each configuration:
#   netdevd               netdevd, one logging hook in /etc/netdevd/link-state.d
#   networkd-dispatcher   Debian's networkd-dispatcher, the same logging script in each operational state's directory
#   compatibility         netdevd with NetworkdDispatcherDirectory=/etc/networkd-dispatcher, running those scripts
# Each run creates PAIRS veth pairs in one `ip -batch` (both ends in the container and raised: 2 x PAIRS links), waits until the
# hooks are quiet, then deletes them the same way. Printed per configuration, median and range of RUNS runs: the
# daemon's own CPU (its main process's utime + stime; the hook runner's apart) for each burst, hook processes
# started, state changes netdevd logged, the time from `ip -batch` returning to the last hook's line, and what the
# daemon logged at warning or worse.
#
# Usage: Benchmarks/Daemon/dispatchers.sh DEB [PAIRS [RUNS]]     (default 500 pairs, 3 runs; needs root)
# `make benchmark-dispatchers` builds the package and runs it.
set -uo pipefail

HERE=$(cd "$(dirname "$0")/../../Packaging/e2e" && pwd)
[ $# -ge 1 ] && [ -f "$1" ] || { echo "usage: $0 DEB [PAIRS [RUNS]]" >&2; exit 2; }
DEB=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
PAIRS=${2:-500}
RUNS=${3:-3}
[ "$(id -u)" = 0 ] || { echo "dispatchers.sh: needs root (systemd-nspawn, cgroups, nsenter)" >&2; exit 1; }

. "$HERE/container.sh"

C dpkg -i "$PKGFILE" > "$WORK/dpkg.log" 2>&1 || { indent < "$WORK/dpkg.log"; fail "install"; exit 1; }
C systemctl start systemd-networkd.service
C mkdir -p /run/bench /etc/netdevd/link-state.d
# The same line from every hook: when, which link, which state.
C sh -c 'cat > /usr/local/bin/bench-hook && chmod 0755 /usr/local/bin/bench-hook' <<'HOOK'
#!/bin/sh
echo "$(date +%s.%N) ${IFACE:-$2} ${STATE:-$NETDEVD_OPER_STATE}" >> /run/bench/hooks.log
HOOK
for d in off no-carrier dormant carrier degraded routable; do
    C sh -c "mkdir -p /etc/networkd-dispatcher/$d.d && cp /usr/local/bin/bench-hook /etc/networkd-dispatcher/$d.d/50-bench"
done
C cp /usr/local/bin/bench-hook /etc/netdevd/link-state.d/50-bench
# Hooks only for the configuration that runs them: netdevd's link-state.d hook is moved aside for the others.
C mkdir -p /etc/netdevd/aside

cpu_of() {    # cpu_of UNIT: the main process's utime + stime in seconds, or 0 when it does not run
    local pid; pid=$(prop "$1" MainPID)
    [ -n "$pid" ] && [ "$pid" != 0 ] || { echo 0; return; }
    C cat "/proc/$pid/stat" 2>/dev/null | awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }'
}
lines() { C sh -c 'cat /run/bench/hooks.log 2>/dev/null | wc -l'; }
# settle: waits until the hook log has not grown for 3 s (at most 300 s); prints the time of its last line
settle() {
    local before=-1 now_lines quiet=0
    for _ in $(seq 1 3000); do
        now_lines=$(lines)
        if [ "$now_lines" = "$before" ]; then quiet=$((quiet + 1)); else quiet=0; before=$now_lines; fi
        [ $quiet -ge 30 ] && break
        sleep 0.1
    done
    C sh -c 'tail -n 1 /run/bench/hooks.log 2>/dev/null' | cut -d' ' -f1
}
batch() {    # batch add|del: one ip -batch for every pair (added with both ends up)
    local i
    for i in $(seq 1 "$PAIRS"); do
        if [ "$1" = add ]; then
            printf 'link add bv%s type veth peer name bw%s\nlink set bv%s up\nlink set bw%s up\n' "$i" "$i" "$i" "$i"
        else
            echo "link del bv$i"
        fi
    done > "$WORK/batch-$1"
    nsenter -t "$L" -n ip -batch "$WORK/batch-$1"
}
state_changes() {    # netdevd's link-state entries since a mark
    C journalctl -u netdevd.service --no-pager -o cat --since=@"$1" MESSAGE_ID=4d0b1a6f8e2c4b7e9a31c5d2e7f80a13 | grep -c .
}

configure() {
    case "$1" in
        netdevd)
            C systemctl stop networkd-dispatcher.service
            C sh -c 'rm -f /etc/netdevd/netdevd.conf.d/bench.conf; mv /etc/netdevd/aside/50-bench /etc/netdevd/link-state.d/ 2>/dev/null; true'
            C systemctl start netdevd.socket netdevd-hooks.socket
            C systemctl restart netdevd.service
            DAEMON=netdevd.service ;;
        networkd-dispatcher)
            C systemctl stop netdevd.service netdevd.socket netdevd-hooks.socket netdevd-hooks.service
            C systemctl restart networkd-dispatcher.service
            DAEMON=networkd-dispatcher.service ;;
        compatibility)
            C systemctl stop networkd-dispatcher.service
            C sh -c 'mv /etc/netdevd/link-state.d/50-bench /etc/netdevd/aside/ 2>/dev/null; printf "[Hooks]\nNetworkdDispatcherDirectory=/etc/networkd-dispatcher\n" > /etc/netdevd/netdevd.conf.d/bench.conf'
            C systemctl start netdevd.socket netdevd-hooks.socket
            C systemctl restart netdevd.service
            DAEMON=netdevd.service ;;
    esac
    sleep 2
    settle > /dev/null
}

RESULTS_FILE=$WORK/results.txt
: > "$RESULTS_FILE"
for run in $(seq 1 "$RUNS"); do
    for config in netdevd networkd-dispatcher compatibility; do
        configure "$config"
        C rm -f /run/bench/hooks.log
        m0=$(mark); c0=$(cpu_of "$DAEMON"); r0=$(cpu_of netdevd-hooks.service); n0=$(cpu_of systemd-networkd.service)
        batch add; t_add=$(now)
        last=$(settle)
        c1=$(cpu_of "$DAEMON"); r1=$(cpu_of netdevd-hooks.service); n1=$(cpu_of systemd-networkd.service)
        h1=$(lines); m1=$(mark)
        batch del; t_del=$(now)
        last_del=$(settle)
        c2=$(cpu_of "$DAEMON"); r2=$(cpu_of netdevd-hooks.service); n2=$(cpu_of systemd-networkd.service)
        h2=$(lines)
        sc1=$(state_changes "$m0"); sc2=$(( $(state_changes "$m1") ))
        sc1=$((sc1 - sc2))
        warnings=$(C journalctl -u "$DAEMON" -u netdevd-hooks.service --no-pager -o cat -p warning --since=@"$m0" | grep -c .)
        awk -v cfg="$config" -v run="$run" -v c0="$c0" -v c1="$c1" -v c2="$c2" -v r0="$r0" -v r1="$r1" -v r2="$r2" \
            -v n0="$n0" -v n1="$n1" -v n2="$n2" -v h1="$h1" -v h2="$h2" -v sc1="$sc1" -v sc2="$sc2" \
            -v ta="$t_add" -v la="${last:-$t_add}" -v td="$t_del" -v ld="${last_del:-$t_del}" -v w="$warnings" 'BEGIN {
            printf "%s %d cpu_create=%.2f cpu_delete=%.2f runner_create=%.2f runner_delete=%.2f networkd_create=%.2f networkd_delete=%.2f hooks_create=%d hooks_delete=%d changes_create=%d changes_delete=%d last_create=%.2f last_delete=%.2f warnings=%d\n",
                cfg, run, c1 - c0, c2 - c1, r1 - r0, r2 - r1, n1 - n0, n2 - n1, h1, h2 - h1, sc1, sc2,
                (la > ta ? la - ta : 0), (ld > td ? ld - td : 0), w }' | tee -a "$RESULTS_FILE"
    done
done

echo
echo "$PAIRS veth pairs ($((2 * PAIRS)) links) created, then deleted; median (min-max) of $RUNS runs; CPU in s of the daemon's main process"
python3 - "$RESULTS_FILE" <<'PYEOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    parts = line.split()
    values = dict(p.split("=") for p in parts[2:])
    rows.setdefault(parts[0], []).append({k: float(v) for k, v in values.items()})
fields = ["cpu_create", "cpu_delete", "runner_create", "runner_delete", "networkd_create", "networkd_delete",
          "hooks_create", "hooks_delete", "changes_create", "changes_delete", "last_create", "last_delete", "warnings"]
configs = [c for c in ["netdevd", "networkd-dispatcher", "compatibility"] if c in rows]
print("| | " + " | ".join(configs) + " |")
print("|---|" + "---|" * len(configs))
for field in fields:
    cells = []
    for config in configs:
        values = sorted(r[field] for r in rows[config])
        median = statistics.median(values)
        fmt = "{:.0f}" if field.startswith(("hooks", "changes", "warnings")) else "{:.2f}"
        cell = fmt.format(median)
        if values[0] != values[-1]:
            cell += " (" + fmt.format(values[0]) + "-" + fmt.format(values[-1]) + ")"
        cells.append(cell)
    print(f"| {field} | " + " | ".join(cells) + " |")
PYEOF
