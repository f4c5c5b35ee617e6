#!/bin/bash
# Tests/Harness/in-netns.sh: netdevd's test harness.
#
#   Tests/Harness/in-netns.sh CMD [ARGS...]
#
# Runs CMD inside a throw-away network namespace that looks like a small booted system
# without systemd as PID 1:
#   - its own network namespace (only `lo`, brought up), so links created with `ip link`
#     never touch the host, and the kernel delivers their uevents only here;
#   - a private mount namespace (`ip netns exec` makes one, with / as rslave, so nothing
#     mounted here propagates back to the host) with tmpfs on /run and /dev, the usual
#     device nodes (null, zero, full, random, urandom, tty, net/tun), /dev/fd and friends,
#     a private devpts and /dev/shm;
#   - cgroup2 on /sys/fs/cgroup: `ip netns exec` remounts /sys without any cgroup hierarchy,
#     and systemd-journald refuses to start without one ("Failed to acquire cgroup root path");
#   - a private systemd-udevd (/run/udev/control), so libudev monitors of source "udev" work;
#   - a private systemd-journald with volatile storage (/run/log/journal), so entries can be
#     read back with `journalctl -o json`; its configuration is a file we write and bind-mount
#     over /etc/systemd/journald.conf (no kmsg, no syslog/console/wall forwarding, audit untouched).
#
# CMD runs with the caller's working directory, stdin, stdout and stderr, and with
#   NETDEVD_TEST_NETNS=<namespace name>   (visible from the host as `ip netns exec <name> ...`)
#   NETDEVD_TEST_HARNESS=1
# in its environment. Note that the host's /run/netns is hidden behind the private /run, so
# `ip netns list` inside shows nothing; namespaces CMD creates with `ip netns add` live in the
# private /run and disappear with it.
#
# On every exit path (normal, CMD failure, harness failure, SIGINT/SIGTERM/SIGHUP) the harness
# stops udevd and journald, terminates whatever is still running in the namespace (CMD's
# leftover background processes included: SIGTERM, then SIGKILL after 3 s) and deletes it.
# (A harness started with `&` from a non-interactive shell inherits SIGINT as "ignored", and
# no shell script can trap that; stop it with SIGTERM. SIGKILL leaves the namespace behind:
# `ip netns list | grep netdevd-test-` finds it.)
#
# Exit status:
#   CMD's exit status (128+N if CMD was killed by signal N);
#   77  the harness cannot run here (not root, no `ip netns`, no systemd-udevd/journald, or the
#       kernel refuses a new network namespace): automake/meson convention for "skipped";
#   99  the harness itself failed (a daemon did not come up within ~5 s, a mount failed);
#   128+N if the harness was interrupted by signal N.
#
# Checked on Debian 12 with systemd 252.

set -uo pipefail

readonly PROG=${0##*/}
readonly UDEVD=/lib/systemd/systemd-udevd
readonly JOURNALD=/lib/systemd/systemd-journald
readonly READY_TIMEOUT_USEC=5000000   # how long udevd and journald get to create their sockets

die() { echo "$PROG: $*" >&2; exit 99; }
skip() { echo "$PROG: skipped: $*" >&2; exit 77; }

# Current time in microseconds, without forking (bash >= 5 has EPOCHREALTIME "s.uuuuuu").
now_usec() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t)); }

# is_running PID: true while PID exists and is not a zombie. `kill -0` alone is not enough:
# a child that has exited stays a zombie, and "alive" to kill -0, until its parent reaps it.
is_running() {
    local stat
    { stat=$(<"/proc/$1/stat"); } 2>/dev/null || return 1
    stat=${stat##*) }            # drop "pid (comm) ": comm may contain spaces and parentheses
    [ "${stat%% *}" != Z ]
}

# stop_pids SIG PID...: send SIG, then give the processes up to 3 s before SIGKILL.
# The PIDs are always ones this harness started or that live in its own namespace.
stop_pids() {
    local sig=$1; shift
    [ $# -gt 0 ] || return 0
    kill "-$sig" "$@" 2>/dev/null
    local deadline=$(( $(now_usec) + 3000000 )) pid
    local -a alive
    while :; do
        alive=()
        for pid in "$@"; do is_running "$pid" && alive+=("$pid"); done
        [ ${#alive[@]} -eq 0 ] && return 0
        [ "$(now_usec)" -ge "$deadline" ] && break
        sleep 0.05
    done
    echo "$PROG: still running after SIG$sig, sending SIGKILL: ${alive[*]}" >&2
    kill -KILL "${alive[@]}" 2>/dev/null
}

###############################################################################################
# Stage 2: inside the namespace. The outer stage re-executes this file through
# `ip netns exec NS`, with _NETDEVD_HARNESS_INNER set to the namespace name.
###############################################################################################
if [ -n "${_NETDEVD_HARNESS_INNER:-}" ]; then
    NS=$_NETDEVD_HARNESS_INNER
    unset _NETDEVD_HARNESS_INNER     # so CMD may itself use the harness (nesting works)

    # Daemon logs go to files the outer stage created in the host's temp dir. Open them before
    # /run is replaced, in case TMPDIR lives under /run; CMD does not inherit these descriptors.
    exec 3>>"$_NETDEVD_HARNESS_LOGDIR/udevd.log" 4>>"$_NETDEVD_HARNESS_LOGDIR/journald.log" ||
        die "cannot open daemon logs in $_NETDEVD_HARNESS_LOGDIR"
    LOGDIR=$_NETDEVD_HARNESS_LOGDIR
    unset _NETDEVD_HARNESS_LOGDIR

    # -n: nothing here may touch /etc/mtab; these mounts live and die with this mount namespace.
    mount -n -t cgroup2 none /sys/fs/cgroup || die "cannot mount cgroup2 on /sys/fs/cgroup"
    mount -n -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run || die "cannot mount tmpfs on /run"
    mkdir -p /run/udev /run/systemd /run/log /run/lock

    # A private /dev: udevd creates nodes and symlinks and chmods for every uevent it sees,
    # and non-network uevents are broadcast to every network namespace, so it must never see
    # the host's devtmpfs.
    mount -n -t tmpfs -o mode=0755,nosuid tmpfs /dev || die "cannot mount tmpfs on /dev"
    mknod -m 666 /dev/null    c 1 3
    mknod -m 666 /dev/zero    c 1 5
    mknod -m 666 /dev/full    c 1 7
    mknod -m 666 /dev/random  c 1 8
    mknod -m 666 /dev/urandom c 1 9
    mknod -m 666 /dev/tty     c 5 0
    mkdir -m 755 /dev/net
    mknod -m 666 /dev/net/tun c 10 200      # for `ip tuntap add` and TUN/TAP tests
    ln -s /proc/self/fd /dev/fd             # bash process substitution <(...) uses /dev/fd
    ln -s /proc/self/fd/0 /dev/stdin
    ln -s /proc/self/fd/1 /dev/stdout
    ln -s /proc/self/fd/2 /dev/stderr
    mkdir -m 1777 /dev/shm                  # POSIX shared memory and semaphores
    mount -n -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm || die "cannot mount tmpfs on /dev/shm"
    # A private devpts instance, so CMD can allocate pseudo-terminals; optional.
    mkdir -m 755 /dev/pts
    if mount -n -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts 2>/dev/null; then
        ln -s pts/ptmx /dev/ptmx
    fi

    # Storage=volatile keeps the journal in /run/log/journal; the tmpfs on /var/log/journal is
    # a safety net so that no configuration can make this journald write to the host's disk.
    if [ -d /var/log/journal ]; then
        mount -n -t tmpfs -o mode=0755 tmpfs /var/log/journal || die "cannot mount tmpfs on /var/log/journal"
    fi
    printf '%s\n' '[Journal]' 'Storage=volatile' 'ReadKMsg=no' 'ForwardToSyslog=no' \
        'ForwardToKMsg=no' 'ForwardToConsole=no' 'ForwardToWall=no' 'Audit=' >/run/journald.conf
    # Audit= (empty) leaves the kernel's audit setting alone. The host's drop-ins, if any,
    # would override our file, so hide them behind an empty tmpfs.
    mount -n --bind /run/journald.conf /etc/systemd/journald.conf ||
        die "cannot bind-mount /run/journald.conf on /etc/systemd/journald.conf"
    if [ -d /etc/systemd/journald.conf.d ]; then
        mount -n -t tmpfs -o mode=0755 tmpfs /etc/systemd/journald.conf.d
    fi

    ip link set lo up || die "cannot bring lo up"

    # Both daemons log to stderr (our log files); stdin is /dev/null so they hold no terminal.
    SYSTEMD_LOG_TARGET=console "$UDEVD" </dev/null >&3 2>&3 3>&- 4>&- & UDEVD_PID=$!
    SYSTEMD_LOG_TARGET=console "$JOURNALD" </dev/null >&4 2>&4 3>&- 4>&- & JOURNALD_PID=$!
    exec 3>&- 4>&-

    stop_daemons() {
        # udevd and journald both exit cleanly on SIGTERM (journald flushes first).
        stop_pids TERM "$UDEVD_PID" "$JOURNALD_PID"
        wait "$UDEVD_PID" "$JOURNALD_PID" 2>/dev/null
    }

    # Wait until every socket exists; fail early if a daemon dies, and after ~5 s at most.
    deadline=$(( $(now_usec) + READY_TIMEOUT_USEC ))
    while :; do
        missing=()
        for s in /run/udev/control /run/systemd/journal/socket /run/systemd/journal/stdout; do
            [ -S "$s" ] || missing+=("$s")
        done
        [ ${#missing[@]} -eq 0 ] && break
        problem=
        kill -0 "$UDEVD_PID" 2>/dev/null || problem="systemd-udevd exited"
        kill -0 "$JOURNALD_PID" 2>/dev/null || problem="${problem:+$problem, }systemd-journald exited"
        [ -z "$problem" ] && [ "$(now_usec)" -ge "$deadline" ] && problem="timed out after $((READY_TIMEOUT_USEC / 1000000)) s"
        if [ -n "$problem" ]; then
            {
                echo "$PROG: private udevd/journald not ready ($problem); missing: ${missing[*]}"
                echo "--- systemd-udevd log (last lines)"; tail -n 20 "$LOGDIR/udevd.log"
                echo "--- systemd-journald log (last lines)"; tail -n 20 "$LOGDIR/journald.log"
            } >&2
            stop_daemons
            exit 99
        fi
        sleep 0.01
    done

    export NETDEVD_TEST_NETNS=$NS NETDEVD_TEST_HARNESS=1
    # No exec: the daemons must be stopped after CMD, and CMD's status returned. The working
    # directory is the caller's: neither `ip netns exec` nor the mounts above change it.
    "$@"
    rc=$?
    stop_daemons
    exit "$rc"
fi

###############################################################################################
# Stage 1: on the host. Check the prerequisites, create the namespace, run stage 2 in it,
# clean up on every exit path.
###############################################################################################
if [ $# -eq 0 ]; then
    echo "usage: $PROG CMD [ARGS...]" >&2
    exit 2
fi

[ "$(id -u)" -eq 0 ] || skip "must run as root to create network namespaces (uid $(id -u))"
command -v ip >/dev/null 2>&1 || skip "'ip' (iproute2) is not installed"
ip netns list >/dev/null 2>&1 || skip "'ip netns' is not available"
[ -x "$UDEVD" ] || skip "$UDEVD is not installed"
[ -x "$JOURNALD" ] || skip "$JOURNALD is not installed"
command -v mount >/dev/null 2>&1 || skip "'mount' is not installed"

# bash's path to this file, made absolute so it still resolves inside the namespace.
SELF=$(cd "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)/$(basename -- "${BASH_SOURCE[0]}")

# Unique per run, so concurrent runs never collide: PID, random number, and a short prefix
# that tells whoever reads `ip netns list` where a leftover came from.
NS=netdevd-test-$$-$RANDOM
NS_CREATED=
CHILD=
LOGDIR=

cleanup() {
    trap - EXIT INT TERM HUP
    if [ -n "$NS_CREATED" ]; then
        # Everything still running in the namespace: the inner stage and its daemons if we
        # were interrupted, and any background process CMD left behind. Deleting the name
        # alone would not end them, and they would keep the namespace alive.
        local pids
        pids=$(ip netns pids "$NS" 2>/dev/null | tr '\n' ' ')
        # shellcheck disable=SC2086  # word splitting wanted: a list of PIDs
        [ -n "${pids// /}" ] && stop_pids TERM $pids
        [ -n "$CHILD" ] && wait "$CHILD" 2>/dev/null
        ip netns del "$NS" 2>/dev/null || echo "$PROG: warning: could not delete network namespace $NS" >&2
    fi
    [ -n "$LOGDIR" ] && rm -rf -- "$LOGDIR"
}
on_signal() {   # $1 = signal number
    echo "$PROG: interrupted by signal $1, cleaning up $NS" >&2
    cleanup
    exit $((128 + $1))
}
trap cleanup EXIT
trap 'on_signal 1' HUP
trap 'on_signal 2' INT
trap 'on_signal 15' TERM

LOGDIR=$(mktemp -d -t netdevd-harness.XXXXXX) || die "cannot create a temporary directory"

ip netns add "$NS" 2>/dev/null || skip "cannot create a network namespace ('ip netns add $NS' failed)"
NS_CREATED=1

# Run stage 2 in the background and wait for it: bash runs traps only between commands, so a
# foreground child would delay our SIGTERM/SIGINT handling until it ended by itself. Two
# side effects of `&` in a non-interactive shell are undone: `0<&0` keeps the caller's stdin
# (instead of /dev/null), and `env --default-signal` restores SIGINT and SIGQUIT, which bash
# sets to "ignore" for background jobs; an ignored signal survives exec, so CMD (and a daemon
# under test that is meant to stop on SIGINT) would otherwise never see them.
_NETDEVD_HARNESS_INNER=$NS _NETDEVD_HARNESS_LOGDIR=$LOGDIR \
    ip netns exec "$NS" env --default-signal=INT,QUIT "$BASH" "$SELF" "$@" 0<&0 &
CHILD=$!
wait "$CHILD"
rc=$?
CHILD=
exit "$rc"     # the EXIT trap cleans up
