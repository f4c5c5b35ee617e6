# Boots the cached bookworm root (rootfs.sh) with `systemd-nspawn --boot` as a container with its own network
# namespace, and cleans it all up at exit (a trap): sourced by run.sh (the end-to-end test) and by
# Benchmarks/Daemon/dispatchers.sh (hook dispatchers side by side under systemd).
#
# Expects HERE (this directory) and DEB (the package, bind-mounted at /mnt/netdevd-e2e/) to be set. Defines the
# output helpers (say, pass, fail, indent), C (a command inside the container, in all its namespaces), L (the
# container's PID 1, as a host pid), WORK (the work directory), prop, mark and wait_until.
# shellcheck shell=bash

ROOT=$("$HERE/rootfs.sh") || { echo "run.sh: no root tree" >&2; exit 1; }
ID=netdevd-e2e-$$
PKGFILE=/mnt/netdevd-e2e/$(basename "$DEB")

# ---- output helpers ----------------------------------------------------------------------------------------
now() { date +%s.%N; }
T0=$(now)
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
say() { echo "[$(since "$T0")s] $*"; }
RESULTS=()
FAILED=0
pass() { RESULTS+=("PASS $*"); echo "PASS $*"; }
fail() { RESULTS+=("FAIL $*"); echo "FAIL $*"; FAILED=1; }
indent() { sed 's/^/    /'; }

# ---- cgroups: hybrid hierarchy (unified + name=systemd, as on this host) or pure cgroup2 --------------------
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    CGDIRS=("/sys/fs/cgroup/$ID")
else
    CGDIRS=("/sys/fs/cgroup/unified/$ID" "/sys/fs/cgroup/systemd/$ID")
fi

NSPAWN=
L=
WORK=
# The script's own output, saved: a signal's trap can run while a shell function's redirection (C ... > file)
# is in force, and its messages must not end up in that file.
exec 3>&1 4>&2
# remove_cgroup DIR: SIGKILL to what is still in the cgroup tree DIR (5 s at most), then its directories go.
remove_cgroup() {
    local p
    for _ in $(seq 1 50); do
        p=$(find "$1" -name cgroup.procs -exec cat {} + 2>/dev/null)
        [ -z "$p" ] && break
        # shellcheck disable=SC2086
        kill -KILL $p 2>/dev/null; sleep 0.1
    done
    find "$1" -depth -type d -exec rmdir {} \; 2>/dev/null
}
cleanup() {
    local rc=$? left=0
    trap - EXIT INT TERM
    exec 1>&3 2>&4
    # Background helpers of this script (nsenter'd monitors) first.
    local j
    for j in $(jobs -p); do [ "$j" != "$NSPAWN" ] && kill "$j" 2>/dev/null; done
    if [ -n "$NSPAWN" ] && kill -0 "$NSPAWN" 2>/dev/null; then
        # SIGTERM to nspawn makes it send SIGRTMIN+3 to the container's systemd: an orderly poweroff.
        kill -TERM "$NSPAWN"
        for _ in $(seq 1 150); do kill -0 "$NSPAWN" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$NSPAWN" 2>/dev/null && { echo "cleanup: nspawn still running after 15 s, SIGKILL"; kill -KILL "$NSPAWN"; }
        wait "$NSPAWN" 2>/dev/null
    fi
    # Anything still in the container's cgroups (after a SIGKILLed nspawn) is killed; then the cgroups go.
    local d
    for d in "${CGDIRS[@]}"; do
        [ -d "$d" ] && remove_cgroup "$d"
    done
    # Leftovers fail the run: cgroups, mounts of the tree or the work directory, the container's init. (Its
    # network namespace and mount namespaces die with its last process.)
    for d in /sys/fs/cgroup/*/"$ID" "/sys/fs/cgroup/$ID"; do
        [ -d "$d" ] && { echo "cleanup: LEFTOVER cgroup $d"; left=1; }
    done
    if findmnt -rn -o TARGET,SOURCE | grep -F -e "$ROOT" -e "${WORK:-$ROOT}" -e "$ID" | grep -q .; then
        echo "cleanup: LEFTOVER mounts:"; findmnt -rn -o TARGET,SOURCE | grep -F -e "$ROOT" -e "${WORK:-$ROOT}" -e "$ID"; left=1
    fi
    if [ -n "$L" ] && kill -0 "$L" 2>/dev/null; then echo "cleanup: LEFTOVER container init $L"; left=1; fi
    [ $left = 0 ] && echo "cleanup: container stopped; no cgroup ($ID), mount or process left behind"
    if [ "${NETDEVD_E2E_KEEP:-0}" = 1 ]; then touch "$WORK/.kept"; echo "cleanup: kept $WORK"; elif [ -n "$WORK" ]; then rm -rf "$WORK"; fi
    [ $left = 0 ] || rc=1
    exit $rc
}
trap cleanup EXIT
trap 'echo "interrupted" >&3; exit 130' INT TERM

# What earlier runs that were SIGKILLed left (their run.sh is gone, so no trap cleaned up): the container, still
# running in its cgroups, and the work directory.
for d in /tmp/netdevd-e2e-*.*; do
    owner=${d#/tmp/netdevd-e2e-}; owner=${owner%%.*}
    [ -d "$d" ] && [ ! -e "$d/.kept" ] && ! kill -0 "$owner" 2>/dev/null && rm -rf "$d"
done
for d in /sys/fs/cgroup/netdevd-e2e-* /sys/fs/cgroup/unified/netdevd-e2e-* /sys/fs/cgroup/systemd/netdevd-e2e-*; do
    [ -d "$d" ] || continue
    owner=${d##*-}
    kill -0 "$owner" 2>/dev/null && continue
    echo "removing the cgroup of an earlier, killed run: $d"
    remove_cgroup "$d"
done

WORK=$(mktemp -d "/tmp/$ID.XXXXXX")
mkdir -p "$WORK/pkg"
cp "$DEB" "$WORK/pkg/" || exit 1

# ---- boot ------------------------------------------------------------------------------------------------------
for d in "${CGDIRS[@]}"; do mkdir "$d" || exit 1; done
say "booting $ROOT as $ID"
# A private mount namespace with a tmpfs on /run/systemd: nspawn keeps its state under /run/systemd/nspawn,
# and the host's /run must not keep any of it. nspawn runs in our own cgroups (--keep-unit --register=no: no
# host systemd or machined to ask), which the container's systemd subdivides and cleanup removes.
# shellcheck disable=SC2016,SC2086
unshare --mount --propagation private bash -c '
    for d in "$@"; do [ "$d" = -- ] && break; echo $$ > "$d/cgroup.procs"; done
    while [ "$1" != -- ]; do shift; done; shift
    mount -n -t tmpfs -o mode=0755 tmpfs /run/systemd
    mkdir -p /run/systemd/nspawn /run/systemd/inaccessible/dir
    touch /run/systemd/inaccessible/reg
    chmod 000 /run/systemd/inaccessible/reg /run/systemd/inaccessible/dir
    exec systemd-nspawn "$@"' netdevd-e2e "${CGDIRS[@]}" -- \
    --quiet --boot --directory="$ROOT" --machine="$ID" --register=no --keep-unit \
    --private-network --volatile=overlay --console=read-only \
    --bind-ro="$WORK/pkg:/mnt/netdevd-e2e" ${NETDEVD_E2E_NSPAWN_ARGS:-} \
    > "$WORK/console.log" 2>&1 &
NSPAWN=$!
for _ in $(seq 1 300); do L=$(pgrep -P "$NSPAWN" -x systemd) && break; sleep 0.05; done
[ -n "$L" ] || { echo "FAIL boot: the container's systemd did not appear"; indent < "$WORK/console.log"; exit 1; }
C() { nsenter -t "$L" -a "$@"; }    # a command inside the container (all its namespaces)
for _ in $(seq 1 200); do C test -S /run/systemd/private 2>/dev/null && break; sleep 0.05; done
state=$(C timeout 60 systemctl is-system-running --wait 2>/dev/null)
say "container up: PID 1 is host pid $L, system state '$state' ($(C systemd-analyze time 2>/dev/null | head -1 | sed 's/^Startup finished in //'))"
if [ "$state" != running ] && [ "$state" != degraded ]; then
    fail "boot: system state '$state'"; exit 1
fi
[ "$state" = degraded ] && C systemctl --failed --no-legend | indent

# ---- helpers inside the container -----------------------------------------------------------------------------
prop() { C systemctl show -p "$2" --value "$1"; }
# A point in time for `journalctl --since=@MARK` (µs; the container's clock is the host's). Not cursors: on 252,
# `--after-cursor` with matches skips the first matching entry when the cursor's own entry does not match.
mark() { date +%s.%6N; }
# wait_until SECONDS COMMAND...: polls every 0.1 s; returns 1 on timeout
wait_until() {
    local limit=$1 t; shift; t=$(now)
    until "$@"; do
        [ "$(awk -v a="$t" -v b="$(now)" -v l="$limit" 'BEGIN { print (b - a > l) }')" = 1 ] && return 1
        sleep 0.1
    done
}

