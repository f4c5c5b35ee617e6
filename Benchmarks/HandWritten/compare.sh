#!/bin/bash
# The parts netdevd writes itself against the well-kept libraries they stand in for, side by side in one run:
#   - JSONCoding against FoundationEssentials' JSONEncoder/JSONDecoder: encoding a ListLinks reply (1,000 and 20,000
#     links) and decoding 100,000 Varlink calls, median of 7 rounds;
#   - what linking each pair costs a process: LinkedOwn (JSONCoding + CommandOptions) and LinkedLibraries
#     (FoundationEssentials + swift-argument-parser) do the same work (parse a command line, encode a reply); their
#     stripped size and private memory (USS: Private_Clean + Private_Dirty of /proc/self/smaps_rollup);
#   - what a person sees: each one's help and its answer to a mistyped option.
# Built as netdevd is (release, the Swift runtime linked statically): the build flags are this script's arguments
# (make benchmark-handwritten passes the Makefile's). Usage: Benchmarks/HandWritten/compare.sh [SWIFT BUILD FLAGS]
set -euo pipefail
cd "$(dirname "$0")/../.."
export NETDEVD_BENCHMARKS=1
SCRATCH=.build-bench
for product in HandWrittenCoders LinkedOwn LinkedLibraries; do
    swift build --scratch-path "$SCRATCH" "$@" --product "$product" >&2
done
bin=$(swift build --scratch-path "$SCRATCH" "$@" --show-bin-path)

echo "== JSON: time (median of 7 rounds)"
"$bin/HandWrittenCoders"

echo
echo "== what linking them costs a process (a command line parsed, a reply encoded)"
printf '%-16s %14s %12s %12s\n' program "stripped MB" "RSS MiB" "USS MiB"
for program in LinkedOwn LinkedLibraries; do
    strip -o "$SCRATCH/$program.stripped" "$bin/$program"
    size=$(stat -c %s "$SCRATCH/$program.stripped")
    # Three runs; the smallest private figure (page cache effects only add).
    best=""
    for _ in 1 2 3; do
        line=$("$bin/$program" lo | awk '/^Rss:/ { rss = $2 } /^Private_(Clean|Dirty):/ { uss += $2 }
            END { printf "%.2f %.2f", rss / 1024, uss / 1024 }')
        if [ -z "$best" ] || awk -v a="${line#* }" -v b="${best#* }" 'BEGIN { exit !(a < b) }'; then best=$line; fi
    done
    printf '%-16s %14.1f %12s %12s\n' "$program" "$(awk -v s="$size" 'BEGIN { print s / 1e6 }')" ${best% *} ${best#* }
done

echo
for program in LinkedOwn LinkedLibraries; do
    echo "== $program: help"
    "$bin/$program" --help || true
    echo "== $program: a mistyped option (--jsn short)"
    "$bin/$program" --jsn short 2>&1 || true
    echo
done
