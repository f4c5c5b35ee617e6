#!/bin/bash
# Builds the netdevd Debian package with dpkg-buildpackage. The last line of output is the path of the .deb.
# Usage: Packaging/build-deb.sh [OUTPUT_DIR]   (default: .build-deb/ in the repository)
# Needs root or sudo only to install missing build tools (debhelper, pkg-config, libudev-dev, libsystemd-dev,
# lintian); Swift 6.3 must be on PATH. The release build is kept in .build-deb/scratch and reused.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "${1:-$REPO/.build-deb}" && cd "${1:-$REPO/.build-deb}" && pwd)
VERSION=$(dpkg-parsechangelog -l "$REPO/Packaging/debian/changelog" -S Version 2>/dev/null \
    || sed -n '1s/.*(\(.*\)).*/\1/p' "$REPO/Packaging/debian/changelog")

needed="debhelper pkg-config libudev-dev libsystemd-dev libstdc++-12-dev lintian dpkg-dev"
missing=""
for p in $needed; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "installing build tools:$missing" >&2
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >&2
fi
command -v swift >/dev/null || { echo "swift is not on PATH: install Swift 6.3 (https://swift.org/install)" >&2; exit 1; }

# A clean source tree: the files git knows (modification times kept, so the release build in SCRATCH stays
# incremental), plus the debian/ directory and the units where dh expects them.
STAGE="$REPO/.build-deb/stage"
SCRATCH="$REPO/.build-deb/scratch"
SRC="$STAGE/netdevd-$VERSION"
rm -rf "$STAGE"
mkdir -p "$SRC"
git -C "$REPO" ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do [ -e "$REPO/$f" ] && printf '%s\0' "$f"; done \
    | (cd "$REPO" && xargs -0 cp -p --parents -t "$SRC")
cp -r "$REPO/Packaging/debian" "$SRC/debian"
cp "$REPO/Packaging/systemd/netdevd.service" "$REPO/Packaging/systemd/netdevd.socket" "$SRC/debian/"
# A second unit of the package: dh_installsystemd --name finds it as debian/netdevd.<name>.service.
cp "$REPO/Packaging/systemd/netdevd-wait-online.service" "$SRC/debian/netdevd.netdevd-wait-online.service"
cp "$REPO/Packaging/systemd/netdevd-hooks.service" "$SRC/debian/netdevd.netdevd-hooks.service"
cp "$REPO/Packaging/systemd/netdevd-hooks.socket" "$SRC/debian/netdevd.netdevd-hooks.socket"

echo "building netdevd $VERSION in $SRC" >&2
(cd "$SRC" && NETDEVD_SWIFT_SCRATCH="$SCRATCH" dpkg-buildpackage -b -us -uc) >&2

DEB="$STAGE/netdevd_${VERSION}_$(dpkg --print-architecture).deb"
[ -f "$DEB" ] || { echo "dpkg-buildpackage made no $DEB" >&2; exit 1; }
mv -f "$DEB" "$OUT/"
DEB="$OUT/$(basename "$DEB")"

echo "lintian:" >&2
lintian --fail-on error --suppress-tags-from-file /dev/null "$DEB" >&2 || { echo "lintian reports errors" >&2; exit 1; }
echo "depends: $(dpkg-deb -f "$DEB" Depends)" >&2
echo "$DEB"
