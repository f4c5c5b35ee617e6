#!/bin/bash
# Lints netdevd's systemd units offline (no running systemd needed):
#   1. systemd-analyze verify --recursive-errors=no on the five units (netdevd.service, netdevd.socket,
#      netdevd-wait-online.service, netdevd-hooks.service, netdevd-hooks.socket): must print nothing
#      and exit 0 (verify exits 0 on mere warnings without --recursive-errors=no, so any output fails too);
#   2. systemd-analyze security --offline=yes --threshold=10 on netdevd.service: the exposure must be <= 1.0.
#
# Usage: Packaging/check-units.sh [--root DIR] [--netdevd BIN] [--man-dir DIR] [--threshold N]
#   (default)      the units in Packaging/systemd/, checked against a built netdevd (verify fails when the
#                  ExecStart= binary does not exist): --netdevd BIN, $NETDEVD_BIN, or the first of
#                  .build-release/release/netdevd, .build/release/netdevd, .build/debug/netdevd. The units are
#                  checked as temporary copies whose ExecStart= names that binary instead of /usr/sbin/netdevd.
#   --root DIR     an installed tree instead (a package's staging directory or an unpacked .deb): the units
#                  from DIR/usr/lib/systemd/system (or DIR/lib/systemd/system), ExecStart= pointed at
#                  DIR/usr/sbin/netdevd, man pages from DIR/usr/share/man.
#   --man-dir DIR  where netdevd.8 and netdevctl.1 (optionally .gz) are, for the Documentation=man: check; by
#                  default DIR/usr/share/man with --root, else Packaging/man if it exists. Without man pages
#                  verify runs with --man=no and says so.
#   --threshold N  the highest acceptable exposure, in tenths (default 20, i.e. 2.0).
# Exits 0 when both checks pass, 1 otherwise. Leaves nothing behind: systemd-analyze creates an empty
# /run/systemd/systemd-units-load when it loads units; it is removed again unless it existed before.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
ROOT=
BIN=${NETDEVD_BIN:-}
MANDIR=
THRESHOLD=10

usage() { sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    --root) ROOT=${2:?}; shift 2 ;;
    --netdevd) BIN=${2:?}; shift 2 ;;
    --man-dir) MANDIR=${2:?}; shift 2 ;;
    --threshold) THRESHOLD=${2:?}; shift 2 ;;
    -h | --help) usage ;;
    *) echo "check-units.sh: unknown argument '$1'" >&2; usage ;;
    esac
done

command -v systemd-analyze >/dev/null || { echo "check-units.sh: systemd-analyze not found (apt-get install systemd)" >&2; exit 1; }

if [ -n "$ROOT" ]; then
    UNITS=
    for d in "$ROOT/usr/lib/systemd/system" "$ROOT/lib/systemd/system"; do
        [ -f "$d/netdevd.service" ] && { UNITS=$d; break; }
    done
    [ -n "$UNITS" ] || { echo "check-units.sh: no netdevd.service under $ROOT/{usr/,}lib/systemd/system" >&2; exit 1; }
    BIN=${BIN:-$ROOT/usr/sbin/netdevd}
    [ -n "$MANDIR" ] || MANDIR=$ROOT/usr/share/man
else
    UNITS=$HERE/systemd
    if [ -z "$BIN" ]; then
        for b in "$REPO/.build-release/release/netdevd" "$REPO/.build/release/netdevd" "$REPO/.build/debug/netdevd"; do
            [ -x "$b" ] && { BIN=$b; break; }
        done
    fi
    [ -n "$MANDIR" ] || MANDIR=$HERE/man
fi
[ -n "$BIN" ] && [ -x "$BIN" ] || {
    echo "check-units.sh: no netdevd binary to verify ExecStart= against (build it, or pass --netdevd BIN)" >&2
    exit 1
}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")

TMP=$(mktemp -d /tmp/netdevd-check-units.XXXXXX)
UNITS_LOAD_EXISTED=no
[ -e /run/systemd/systemd-units-load ] && UNITS_LOAD_EXISTED=yes
cleanup() {
    rm -rf "$TMP"
    [ "$UNITS_LOAD_EXISTED" = yes ] || rm -f /run/systemd/systemd-units-load
}
trap cleanup EXIT

# Temporary copies: the same units, ExecStart= pointing at the binary under test.
# netdevctl is netdevd under another name: the one beside the binary (a symlink in a package), or the binary.
CTL=$(dirname "$BIN")/netdevctl
[ -x "$CTL" ] || CTL=$BIN
for u in netdevd.service netdevd.socket netdevd-wait-online.service netdevd-hooks.service netdevd-hooks.socket; do
    [ -f "$UNITS/$u" ] || { echo "check-units.sh: $UNITS/$u is missing" >&2; exit 1; }
    sed "s#^ExecStart=\([-+!@:]*\)/usr/sbin/netdevd\b#ExecStart=\1$BIN#; s#^ExecStart=/usr/bin/netdevctl\b#ExecStart=$CTL#; s#^ExecReload=+/usr/bin/netdevctl\b#ExecReload=+$CTL#" \
        "$UNITS/$u" > "$TMP/$u"
done
grep -q "^ExecStart=.*$BIN" "$TMP/netdevd.service" || { echo "check-units.sh: netdevd.service has no ExecStart=/usr/sbin/netdevd" >&2; exit 1; }

# Man pages for Documentation=man:...: linked into a MANPATH of their own, so only these pages count.
MANOPT=--man=no
MANNOTE="man pages not checked: none found (--man-dir)"
if [ -d "$MANDIR" ]; then
    found=0
    while IFS= read -r page; do
        name=$(basename "$page"); section=${name%.gz}; section=${section##*.}
        mkdir -p "$TMP/man/man$section"; ln -sf "$page" "$TMP/man/man$section/$name"; found=$((found + 1))
    done < <(find "$MANDIR" -type f \( -name 'netdevd.[0-9]*' -o -name 'netdevctl.[0-9]*' -o -name 'netdevd.conf.[0-9]*' \))
    if [ "$found" -gt 0 ]; then
        export MANPATH=$TMP/man
        MANOPT=--man=yes
        MANNOTE="man pages checked against $found page(s) from $MANDIR"
    fi
fi

fail=0
echo "== units: $UNITS (ExecStart= -> $BIN)"
echo "== systemd-analyze verify $MANOPT --recursive-errors=no netdevd.service netdevd.socket netdevd-wait-online.service netdevd-hooks.service netdevd-hooks.socket   ($MANNOTE)"
out=$(cd "$TMP" && systemd-analyze verify "$MANOPT" --recursive-errors=no ./netdevd.service ./netdevd.socket \
    ./netdevd-wait-online.service ./netdevd-hooks.service ./netdevd-hooks.socket 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ -z "$out" ]; then
    echo "PASS verify: clean (exit 0, no output)"
else
    echo "$out" | sed 's/^/    /'
    echo "FAIL verify: exit $rc$([ -n "$out" ] && echo ", with the output above")"
    fail=1
fi

echo "== systemd-analyze security --offline=yes --threshold=$THRESHOLD netdevd.service"
out=$(cd "$TMP" && systemd-analyze security --offline=yes --threshold="$THRESHOLD" ./netdevd.service 2>&1)
rc=$?
# The settings that still add exposure, then the verdict.
echo "$out" | grep -E '^(✗|\s+NAME)' | sed 's/^/    /'
line=$(echo "$out" | grep -E 'Overall exposure level' | sed 's/^→ //')
score=$(echo "$line" | sed -n 's/.*: \([0-9.]*\) .*/\1/p')
echo "    $line"
limit=$(awk -v t="$THRESHOLD" 'BEGIN { printf "%.1f", t / 10 }')
if [ $rc -eq 0 ] && [ -n "$score" ]; then
    echo "PASS security: exposure $score <= $limit"
else
    [ -n "$score" ] || echo "$out" | tail -5 | sed 's/^/    /'
    echo "FAIL security: exposure ${score:-unknown} (limit $limit), exit $rc"
    fail=1
fi
exit $fail
