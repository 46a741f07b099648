#!/usr/bin/env bash
# Instructions per event of every variant of the peers bench, under
# callgrind: deterministic figures where the criterion timings are noisy.
#
# Builds the bench, then for each variant and mode (`fire`: one-way events
# then a flush; `call`: round trips) runs the binary twice under
# `valgrind --tool=callgrind` with PEERS_CALLGRIND=<variant>:<mode>:<n>,
# for n = 1,000 and n = 11,000. The difference divided by 10,000 is the
# cost of one event, with the process start, the runtime and the agent's
# creation cancelled out. Prints a table with the ratio to bare_actor.
#
# Usage: benches/peers/callgrind.sh   (from anywhere; needs valgrind and python3)
set -euo pipefail

cd "$(dirname "$0")"
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is not installed" >&2; exit 1; }

variants=(bare_actor executor executor_observer executor_watch executor_subscribed ractor kameo tokio_fsm)
modes=(fire call)
small=1000
large=11000

bin=$(../../scripts/bench_exe.sh peers)

out_dir=$(mktemp -d)
trap 'rm -rf "$out_dir"' EXIT

# Instructions executed by one run, or nothing if the variant cannot run
# that mode (the binary then exits with an error).
instructions() {
    local spec=$1 log="$out_dir/log"
    if ! PEERS_CALLGRIND="$spec" valgrind --tool=callgrind --callgrind-out-file="$out_dir/out" "$bin" >"$log" 2>&1; then
        return 0
    fi
    sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$log" | tail -n 1
}

declare -A per_event
for mode in "${modes[@]}"; do
    for variant in "${variants[@]}"; do
        low=$(instructions "$variant:$mode:$small")
        high=$(instructions "$variant:$mode:$large")
        if [[ -n "$low" && -n "$high" ]]; then
            per_event[$variant:$mode]=$(((high - low) / (large - small)))
        fi
    done
done

printf '\ninstructions per event (callgrind, (I(%d) - I(%d)) / %d, current-thread runtime)\n\n' \
    "$large" "$small" "$((large - small))"
printf '| %-20s | %12s | %8s | %12s | %8s |\n' variant "fire" "x bare" "call" "x bare"
printf '|%s|%s|%s|%s|%s|\n' "----------------------" "--------------" "----------" "--------------" "----------"
for variant in "${variants[@]}"; do
    row=$(printf '| %-20s ' "$variant")
    for mode in "${modes[@]}"; do
        value=${per_event[$variant:$mode]:-}
        base=${per_event[bare_actor:$mode]:-}
        if [[ -n "$value" ]]; then
            ratio=$(awk -v v="$value" -v b="$base" 'BEGIN { if (b > 0) printf "%.2fx", v / b; else print "-" }')
            row+=$(printf '| %12s | %8s ' "$value" "$ratio")
        else
            row+=$(printf '| %12s | %8s ' "n/a" "")
        fi
    done
    echo "$row|"
done
