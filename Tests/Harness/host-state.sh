#!/bin/bash
# Prints what the kernel tests must leave untouched on the host: its links (name, index, state, MTU, MAC),
# addresses and routes, the network namespaces, and the names in /run and /dev. `make test-kernel` compares
# the output before and after the tests. /run/netns itself is left out: `ip netns add` creates that directory
# the first time it is used, and it is the one place a namespace is allowed to appear (and must be gone again).
# Any command that fails makes it fail (exit 1), so two empty snapshots never compare equal by accident.
set -euo pipefail
links=$(ip -o link show)
addresses=$(ip -o addr show)
routes=$(ip route show table all)
[ -n "$links" ] || { echo "host-state.sh: ip link show listed no link (not even lo)" >&2; exit 1; }
echo "# links"; sed -E 's/^[0-9]+: //; s/ qdisc [^ ]+//; s/ group [^ ]+//; s/ qlen [0-9]+//' <<<"$links"
echo "# addresses"; awk '{print $2, $3, $4}' <<<"$addresses"
# The kernel's local, broadcast and multicast routes come and go with addresses; the others are the host's.
echo "# routes"; grep -v '^local\|^broadcast\|^multicast' <<<"$routes" || [ $? = 1 ]
echo "# namespaces"; if [ -d /run/netns ]; then ls -A /run/netns; fi
echo "# /run"; ls -A /run | grep -vx netns || [ $? = 1 ]
echo "# /dev"; ls -A /dev
