#!/bin/bash
# Fuzz/run.sh: runs netdevd's libFuzzer targets (Fuzz/Checks/FuzzTarget.swift) and prints one row per target:
# executions, seconds, executions per second, coverage (edges and features, as libFuzzer counts them) and crashes.
#
#   Fuzz/run.sh BINARY [--runs N | --seconds S] [--jobs J] [--merge] [TARGET...]
#
# BINARY is the fuzz build (make fuzz builds it: swift build -c release --sanitize=fuzzer
# -Xswiftc -sanitize=fuzzer,address).
# Each target starts from its corpus in Fuzz/Corpus/TARGET and writes what it finds to .build-fuzz/corpus/TARGET,
# so the repository's corpus changes only with --merge, which adds the inputs that reach new coverage. A crash is
# written to .build-fuzz/crashes/TARGET-crash-*, reported with the command that reproduces it, and fails the run
# (copy the input into Fuzz/Corpus/TARGET once it is fixed: the corpus test then keeps it fixed).
set -uo pipefail
cd "$(dirname "$0")/.."

binary=${1:?usage: Fuzz/run.sh BINARY [--runs N | --seconds S] [--jobs J] [--merge] [TARGET...]}
shift
limit=(-runs=10000000)
jobs=2
merge=0
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) limit=(-runs="$2"); shift 2 ;;
        --seconds) limit=(-max_total_time="$2"); shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --merge) merge=1; shift ;;
        -*) echo "Fuzz/run.sh: unknown option $1" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
# The targets are the corpus folders: the corpus test (Tests/FuzzCorpusTests, run by make test) checks that they
# are exactly FuzzTarget's cases, and the fuzz binary refuses a name it does not know.
declared=()
for folder in Fuzz/Corpus/*/; do declared+=("$(basename "$folder")"); done
[ ${#declared[@]} -gt 0 ] || { echo "Fuzz/run.sh: no target (no folder in Fuzz/Corpus)" >&2; exit 2; }
[ ${#targets[@]} -gt 0 ] || targets=("${declared[@]}")
for target in "${targets[@]}"; do
    [ -d "Fuzz/Corpus/$target" ] || { echo "Fuzz/run.sh: no target '$target' (no Fuzz/Corpus/$target)" >&2; exit 2; }
done

# AddressSanitizer records no allocation stacks (a sixth of the time went to them); a crash's reproduction command
# runs without this and reports them in full.
export ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=0}
work=.build-fuzz
mkdir -p "$work/logs" "$work/crashes"

# One target: libFuzzer's own log in $work/logs/TARGET.log. Swift's backtracer is off: libFuzzer reports the crash
# (with the check's message) and writes the input.
run_one() {
    local target=$1
    mkdir -p "$work/corpus/$target"
    rm -f "$work/crashes/$target"-*
    SWIFT_BACKTRACE=enable=no NETDEVD_FUZZ_TARGET=$target "$binary" "${limit[@]}" -max_len=4096 -print_final_stats=1 \
        -artifact_prefix="$work/crashes/$target-" "$work/corpus/$target" "Fuzz/Corpus/$target" \
        > "$work/logs/$target.log" 2>&1
    # Only a run that found nothing adds to the corpus (a crash's input is kept by hand, once it is fixed).
    if [ $merge = 1 ] && [ -z "$(find "$work/crashes" -name "$target-*")" ]; then
        SWIFT_BACKTRACE=enable=no NETDEVD_FUZZ_TARGET=$target "$binary" -merge=1 "Fuzz/Corpus/$target" \
            "$work/corpus/$target" > "$work/logs/$target.merge.log" 2>&1 ||
            echo "Fuzz/run.sh: merging $target's corpus failed: see $work/logs/$target.merge.log" >&2
    fi
}

running=0
for target in "${targets[@]}"; do
    run_one "$target" &
    running=$((running + 1))
    if [ $running -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait

failed=0
ran=0
printf '%-10s %12s %8s %10s %8s %9s %8s\n' target executions seconds exec/s edges features crashes
for target in "${targets[@]}"; do
    log=$work/logs/$target.log
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    seconds=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
    edges=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    features=$(grep -o 'ft: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    crashes=$(find "$work/crashes" -name "$target-crash-*" -o -name "$target-leak-*" -o -name "$target-timeout-*" \
        -o -name "$target-oom-*" | wc -l)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    printf '%-10s %12s %8s %10s %8s %9s %8s\n' "$target" "${runs:-?}" "${seconds:-?}" "${rate:-?}" "${edges:-?}" \
        "${features:-?}" "$crashes"
    if [ "$crashes" -gt 0 ] || ! grep -q '^Done' "$log" || [ "${runs:-0}" -eq 0 ]; then
        failed=1
        echo "  $target failed: see $log; reproduce with:" \
            "NETDEVD_FUZZ_TARGET=$target $binary $(find "$work/crashes" -name "$target-*" | head -n 1)"
        grep -m 3 -E 'Fatal error|ERROR: (AddressSanitizer|libFuzzer)' "$log" | sed 's/^/  /'
    else
        ran=$((ran + 1))
    fi
done
tally="$ran targets ran without a crash of ${#targets[@]} run, ${#declared[@]} declared"
echo "fuzz: $tally"
[ -z "${FUZZ_TALLY:-}" ] || echo "$tally" > "$FUZZ_TALLY"
[ "$ran" = "${#declared[@]}" ] || [ ${#targets[@]} -lt ${#declared[@]} ] || failed=1
exit $failed
