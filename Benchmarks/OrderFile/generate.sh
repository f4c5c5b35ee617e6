#!/bin/bash
# Writes the symbol ordering file for linking netdevd with lld (`--symbol-ordering-file`).
#
#   Benchmarks/OrderFile/generate.sh BINARY [OUTPUT]      (default OUTPUT: Packaging/netdevd.order)
#
# Why: the kernel maps a file's pages around every page that faults (fault-around, 64 KiB), and the code
# netdevd runs at start and on a link event is spread over most of .text, so an idle netdevd holds most of
# its text in memory. Listed first, lld packs those functions together, and idle RSS drops (~1.85 MiB).
#
# How: fcov.c (next to this file) runs BINARY with a one-shot breakpoint on every function and prints the
# functions that ran, in first-run order. The workload runs in the project's namespace harness
# (Tests/Harness/in-netns.sh, so root), never in the host's network: netdevd starts with an empty
# configuration and one trivial hook and is ready when `netdevctl status` answers; a veth pair is created,
# raised, addressed, downed and deleted; then, with a monitor attached and the metrics textfile on, a burst as an
# operator's host has them: 50 pairs made, raised and addressed in one `ip -batch` each, listed (table and JSON),
# the metrics asked for, and deleted in one batch; `netdevctl links` and `netdevctl status`; SIGHUP; SIGTERM.
# Without the burst, the code only bursts run (the loop's batches, the textfile, monitors' sends) lay spread over
# .text (docs/PERFORMANCE.md, "The binary").
# BINARY should be a release build of the source the ordering is for; symbols that later disappear only
# make lld warn ("no such symbol"). Needs cc, nm, ip. Prints how many symbols it wrote.
set -euo pipefail

PROG=generate.sh
die() { echo "$PROG: $*" >&2; exit 1; }

###############################################################################################
# Inside the harness's namespace: run the workload under fcov, hits to $_NETDEVD_ORDER_WORK/hits.
###############################################################################################
if [ -n "${_NETDEVD_ORDER_WORK:-}" ]; then
    WORK=$_NETDEVD_ORDER_WORK BINARY=$1
    # The harness sets these; without them the `ip link` below would change the host's links.
    [ -n "${NETDEVD_TEST_HARNESS:-}" ] && [ -n "${NETDEVD_TEST_NETNS:-}" ] || die "not inside the harness"

    # Not writable by others whatever the umask: netdevd refuses hooks in such a directory.
    mkdir -m 0755 "$WORK/hooks"
    # A hook, as on a host that has one: its start, supervision and end are code every burst runs (left out of
    # the list, they were spread over .text). It leaves a mark, so that a hook netdevd refused cannot go
    # unnoticed.
    printf '#!/bin/sh\necho "$1 $2 $NETDEVD_OPER_STATE" >>"%s"\n' "$WORK/hook-ran" >"$WORK/hooks/50-order"
    chmod 0755 "$WORK/hooks/50-order"
    ln -s "$BINARY" "$WORK/netdevctl"   # one binary; the name it runs under picks the program
    export NETDEVD_SOCKET=$WORK/io.netdevd
    netdevctl() { "$WORK/netdevctl" "$@" >/dev/null; }

    # The metrics textfile on, as load.py's runs and many hosts have it.
    mkdir "$WORK/textfile"
    printf '[Metrics]\nTextfileDirectory=%s\n' "$WORK/textfile" >"$WORK/netdevd.conf"
    "$WORK/fcov" "$WORK/functions" "$BINARY" --config "$WORK/netdevd.conf" --socket "$NETDEVD_SOCKET" \
        --log-target journal --hooks-dir "$WORK/hooks" >"$WORK/hits" &
    FCOV=$!
    # Signals go to netdevd itself, fcov's only child (fcov passes them on, but takes none for it).
    NETDEVD=
    for _ in $(seq 300); do
        [ -n "$NETDEVD" ] || NETDEVD=$(pgrep -P "$FCOV" || true)
        [ -n "$NETDEVD" ] && netdevctl status 2>/dev/null && break
        kill -0 "$FCOV" 2>/dev/null || die "netdevd exited before it was ready"
        sleep 0.1
    done
    netdevctl status || { kill -TERM "$FCOV"; die "netdevd not ready after 30 s"; }

    # Pauses let netdevd handle each change on its own, as it would on a host.
    ip link add ndorder0 type veth peer name ndorder1
    sleep 0.5
    ip link set ndorder0 up
    ip link set ndorder1 up
    sleep 0.5
    ip address add 192.0.2.1/24 dev ndorder0    # TEST-NET-1
    sleep 0.5
    ip link set ndorder0 down
    sleep 0.5
    ip link delete ndorder0
    sleep 0.5
    # A burst, with a monitor attached: what the loop, the journal, the monitors and the textfile run only when
    # many changes come at once.
    "$WORK/netdevctl" monitor --json >/dev/null &
    MONITOR=$!
    sleep 0.5
    for i in $(seq 50); do echo "link add ndburst$i type veth peer name ndburstp$i"; done | ip -batch -
    for i in $(seq 50); do echo "link set ndburst$i up"; echo "link set ndburstp$i up"; done | ip -batch -
    for i in $(seq 50); do echo "address add 198.51.100.$i/32 dev ndburst$i"; done | ip -batch -   # TEST-NET-2
    sleep 1.5    # the textfile is written a second after a change
    netdevctl links --json=short
    netdevctl metrics
    for i in $(seq 50); do echo "link delete ndburst$i"; done | ip -batch -
    sleep 1.5
    # Still following, or its code and the monitors' sends were not all run: a list made so would be short of them.
    kill -0 "$MONITOR" 2>/dev/null || { kill -TERM "$NETDEVD"; die "the monitor ended during the burst"; }
    kill -TERM "$MONITOR"
    wait "$MONITOR" || true    # ended by the TERM above
    netdevctl links
    netdevctl status
    [ -s "$WORK/hook-ran" ] || { kill -TERM "$NETDEVD"; die "the hook did not run (refused?)"; }
    kill -HUP "$NETDEVD"
    sleep 0.5
    netdevctl status    # a request after the reload
    kill -TERM "$NETDEVD"
    wait "$FCOV" || die "netdevd did not exit cleanly on SIGTERM (status $?)"
    exit 0
fi

###############################################################################################
# On the host: list the functions, build fcov, run the workload in the harness, write OUTPUT.
###############################################################################################
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 BINARY [OUTPUT]" >&2; exit 2; }
HERE=$(cd "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=$(cd "$HERE/../.." && pwd -P)
[ -f "$1" ] && [ -x "$1" ] || die "$1: not an executable file"
BINARY=$(cd "$(dirname -- "$1")" && pwd -P)/$(basename -- "$1")
OUTPUT=${2:-$ROOT/Packaging/netdevd.order}
[ "$(id -u)" = 0 ] || die "needs root (the workload runs in a network namespace)"

WORK=$(mktemp -d -t netdevd-order.XXXXXX) || die "cannot create a temporary directory"
trap 'rm -rf -- "$WORK"' EXIT

cc -O2 -Wall -o "$WORK/fcov" "$HERE/fcov.c" || die "cannot compile fcov.c"

# Functions are the defined text symbols with a size; where names share an address, the first one.
nm --defined-only --print-size "$BINARY" |
    awk 'NF == 4 && ($3 == "t" || $3 == "T") && $2 !~ /^0+$/ { print $1, $4 }' |
    sort -s -u -k1,1 >"$WORK/functions"
[ -s "$WORK/functions" ] || die "$BINARY: no function symbols (stripped?)"

_NETDEVD_ORDER_WORK=$WORK "$ROOT/Tests/Harness/in-netns.sh" "$BASH" "$HERE/generate.sh" "$BINARY" ||
    die "the workload failed (status $?)"

# lld skips blank lines and lines starting with '#' in an ordering file.
{
    echo "# Symbol ordering for lld (--symbol-ordering-file): the functions netdevd runs at start and on"
    echo "# link events, in first-run order, packed together to keep its idle RSS small."
    echo "# Written by Benchmarks/OrderFile/generate.sh; regenerate it there rather than edit it."
    cat "$WORK/hits"
} >"$WORK/order"
cp -- "$WORK/order" "$OUTPUT"
echo "$PROG: wrote $(wc -l <"$WORK/hits") symbols to $OUTPUT"
