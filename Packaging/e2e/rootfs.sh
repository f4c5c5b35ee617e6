#!/bin/bash
# Builds (once) the minimal Debian bookworm root that Packaging/e2e/run.sh boots with `systemd-nspawn --boot`.
#
# Usage: Packaging/e2e/rootfs.sh [DIR]      (default: $NETDEVD_E2E_ROOT or /var/cache/netdevd-e2e/bookworm)
#
# The tree is cached: when DIR holds a complete tree built with the same package list, it is reused as is
# (run.sh boots it with --volatile=overlay, so it stays pristine). A missing, partial or outdated tree is
# rebuilt: debootstrap writes to DIR.partial, and only a finished tree is renamed to DIR, with a stamp file.
# Prints DIR on standard output (everything else goes to standard error). Needs root; installs debootstrap and
# systemd-container with apt-get when they are missing. The mirror is apt's own (deb.debian.org here).
set -euo pipefail

DIR=${1:-${NETDEVD_E2E_ROOT:-/var/cache/netdevd-e2e/bookworm}}
SUITE=bookworm
# systemd as PID 1 (systemd-sysv), systemctl/journalctl/udevd, dbus for systemctl's bus-less fallbacks to work
# like on a real host, libsystemd0 and libudev1 (the package's dependencies besides libc), iproute2 for `ip`
# inside the container, systemd-journal-remote for its systemd-journal-upload (the central-journal check). Nothing else: the checks run their logic on the host and only call these inside.
PACKAGES=systemd,systemd-sysv,dbus,libsystemd0,libudev1,udev,iproute2,systemd-journal-remote,networkd-dispatcher
STAMP=.netdevd-e2e-rootfs
WANT="suite=$SUITE packages=$PACKAGES"

log() { echo "rootfs.sh: $*" >&2; }

[ "$(id -u)" = 0 ] || { log "needs root (debootstrap)"; exit 1; }

if [ -f "$DIR/$STAMP" ] && [ "$(cat "$DIR/$STAMP")" = "$WANT" ] && [ -x "$DIR/lib/systemd/systemd" ] \
    && [ -x "$DIR/usr/bin/dpkg" ] && [ -x "$DIR/bin/ip" ]; then
    log "reusing $DIR"
    echo "$DIR"
    exit 0
fi

need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v systemd-nspawn >/dev/null || need+=(systemd-container)
if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq "${need[@]}" >&2 || { apt-get update -qq >&2 && apt-get install -y -qq "${need[@]}" >&2; }
fi

MIRROR=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
[ -n "$MIRROR" ] || MIRROR=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
[ -n "$MIRROR" ] || MIRROR=http://deb.debian.org/debian

PARTIAL="$DIR.partial"
rm -rf "$PARTIAL"
mkdir -p "$(dirname "$DIR")"
log "debootstrap $SUITE into $PARTIAL from $MIRROR"
start=$(date +%s)
LOG=$(mktemp /tmp/netdevd-e2e-debootstrap.XXXXXX.log)
if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$PARTIAL" "$MIRROR" > "$LOG" 2>&1; then
    tail -n 30 "$LOG" >&2
    log "debootstrap failed (full log: $LOG); $PARTIAL left for inspection, it is removed by the next run"
    exit 1
fi
rm -f "$LOG"
# No apt lists or downloaded .debs in the cache: they are only needed to build the tree.
rm -rf "$PARTIAL"/var/cache/apt/archives/*.deb "$PARTIAL"/var/lib/apt/lists/*_* 2>/dev/null || true
# A fixed machine id would make every boot share one journal directory; leave it empty so systemd makes a
# transient one each boot (nspawn passes one anyway).
: > "$PARTIAL/etc/machine-id"
echo netdevd-e2e > "$PARTIAL/etc/hostname"
echo "$WANT" > "$PARTIAL/$STAMP"
rm -rf "$DIR"
mv "$PARTIAL" "$DIR"
log "built $DIR in $(( $(date +%s) - start )) s, $(du -sh "$DIR" | cut -f1)"
echo "$DIR"
