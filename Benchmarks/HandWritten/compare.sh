#!/bin/bash
# The parts netdevd writes itself against the well-kept libraries they stand in for, side by side in one run:
#   - JSONCoding against FoundationEssentials' JSONEncoder/JSONDecoder: encoding a ListLinks reply (1,000 and 20,000
#     links) and decoding 100,000 Varlink calls, median of 7 rounds;
#   - what linking each costs a process: LinkedOwn (JSONCoding and CommandOptions), LinkedFoundationJSON and
#     LinkedArgumentParser (one of the two replaced by its library) and LinkedLibraries (both) do the same work (parse
#     a command line, encode a reply); their stripped size and private memory (USS: Private_Clean + Private_Dirty of
#     /proc/self/smaps_rollup, the least of 3 runs);
#   - what a person sees: each one's help and its answer to a mistyped option.
# Built as netdevd is (release, the Swift runtime linked statically): the build flags are this script's arguments
# (make benchmark-handwritten passes the Makefile's). Usage: Benchmarks/HandWritten/compare.sh [SWIFT BUILD FLAGS]
set -euo pipefail
cd "$(dirname "$0")/../.."
export NETDEVD_BENCHMARKS=1
SCRATCH=.build-bench
for product in HandWrittenCoders LinkedOwn LinkedFoundationJSON LinkedArgumentParser LinkedLibraries; do
    swift build --scratch-path "$SCRATCH" "$@" --product "$product" >&2
done
bin=$(swift build --scratch-path "$SCRATCH" "$@" --show-bin-path)

echo "== JSON: time (median of 7 rounds)"
"$bin/HandWrittenCoders"

echo
echo "== what linking them costs a process (a command line parsed, a reply encoded)"
printf '%-22s %-36s %12s %9s %9s\n' program "JSON, command line" "stripped MB" "RSS MiB" "USS MiB"
for program in LinkedOwn LinkedFoundationJSON LinkedArgumentParser LinkedLibraries; do
    case $program in
        LinkedOwn) what="JSONCoding, CommandOptions" ;;
        LinkedFoundationJSON) what="FoundationEssentials, CommandOptions" ;;
        LinkedArgumentParser) what="JSONCoding, swift-argument-parser" ;;
        *) what="FoundationEssentials, swift-argument-parser" ;;
    esac
    strip -o "$SCRATCH/$program.stripped" "$bin/$program"
    size=$(stat -c %s "$SCRATCH/$program.stripped")
    # Three runs; the smallest private figure (page cache effects only add).
    best=""
    for _ in 1 2 3; do
        line=$("$bin/$program" lo | awk '/^Rss:/ { rss = $2 } /^Private_(Clean|Dirty):/ { uss += $2 }
            END { printf "%.2f %.2f", rss / 1024, uss / 1024 }')
        if [ -z "$best" ] || awk -v a="${line#* }" -v b="${best#* }" 'BEGIN { exit !(a < b) }'; then best=$line; fi
    done
    printf '%-22s %-36s %12.1f %9s %9s\n' "$program" "$what" "$(awk -v s="$size" 'BEGIN { print s / 1e6 }')" \
        ${best% *} ${best#* }
done

echo
for program in LinkedOwn LinkedLibraries; do
    echo "== $program: help"
    "$bin/$program" --help || true
    echo "== $program: a mistyped option (--jsn short)"
    "$bin/$program" --jsn short 2>&1 || true
    echo
done
