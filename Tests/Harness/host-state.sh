#!/bin/bash
# Prints what the kernel tests must leave untouched on the host: its links (name, index, state, MTU, MAC),
# addresses and routes, the network namespaces, and the names in /run and /dev. `make test-kernel` compares
# the output before and after the tests. /run/netns itself is left out: `ip netns add` creates that directory
# the first time it is used, and it is the one place a namespace is allowed to appear (and must be gone again).
set -uo pipefail
echo "# links"; ip -o link show | sed -E 's/^[0-9]+: //; s/ qdisc [^ ]+//; s/ group [^ ]+//; s/ qlen [0-9]+//'
echo "# addresses"; ip -o addr show | awk '{print $2, $3, $4}'
echo "# routes"; ip route show table all 2>/dev/null | grep -v '^local\|^broadcast\|^multicast' || true
echo "# namespaces"; ls -A /run/netns 2>/dev/null
echo "# /run"; ls -A /run | grep -vx netns
echo "# /dev"; ls -A /dev
