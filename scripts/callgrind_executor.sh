#!/usr/bin/env bash
# The executor against the equal-channel actor (agent-fsm/benches/executor_fair.rs),
# instructions and wall time from one build, side by side.
#
# 1. For each workload (ping_pong, stream), runtime flavour, mode (fire,
#    call) and side, runs the bench binary twice under callgrind with
#    EXECUTOR_FAIR_CALLGRIND=<workload>:<side>:<flavour>:<mode>:<n>, for
#    n = 1,020 and 11,220 events; the difference divided by 10,200 is the
#    cost of one event, with the process start, the runtime, the agent's
#    creation and the warm-up cancelled out. All threads are counted (a
#    2-worker runtime's idle worker too, which makes those rows noisier).
# 2. Unless --no-criterion, runs criterion on the same binary (extra
#    arguments go to criterion, e.g. --quick) and reads every median back,
#    then the paired timing (EXECUTOR_FAIR_AB=500: the sides timed one
#    round each in turn, the median of each side's ratio to the actor's
#    time in the same turn).
# Prints one table: instructions per event, criterion's wall time per
# event and the paired ratio, each beside its ratio to the actor of the
# same row.
#
# Wall times move with the machine's load (several builds share 2 cores
# here): criterion's medians are taken seconds apart, the paired ratio
# from rounds milliseconds apart; repeat the run, and trust the
# instruction counts for the stable ratio.
#
# Usage: scripts/callgrind_executor.sh [--no-criterion] [criterion args...]
#   env CARGO_TARGET_DIR as for any build; BIN=<path> to use a built binary.
set -euo pipefail

criterion=1
if [[ ${1:-} == --no-criterion ]]; then
    criterion=0
    shift
fi
cd "$(dirname "$0")/../agent-fsm"
command -v valgrind >/dev/null || { echo "callgrind_executor.sh: valgrind is not installed" >&2; exit 1; }
bin=${BIN:-$(../scripts/bench_exe.sh executor_fair)}

small=1020
large=11220
workloads=(ping_pong stream)
flavours=(current_thread multi_thread)
modes=(fire call)
sides=(actor executor executor_unobserved)

out_dir=$(mktemp -d)
trap 'rm -rf "$out_dir"' EXIT

instructions() {
    EXECUTOR_FAIR_CALLGRIND="$1" valgrind --tool=callgrind --callgrind-out-file="$out_dir/out" "$bin" \
        >"$out_dir/log" 2>&1
    sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$out_dir/log" | tail -n 1
}

results="$out_dir/results"
: >"$results"
for workload in "${workloads[@]}"; do
    for flavour in "${flavours[@]}"; do
        for mode in "${modes[@]}"; do
            for side in "${sides[@]}"; do
                low=$(instructions "$workload:$side:$flavour:$mode:$small")
                high=$(instructions "$workload:$side:$flavour:$mode:$large")
                echo "$workload $flavour $mode $side $(((high - low) * 10 / (large - small)))" >>"$results"
            done
        done
    done
done

# criterion writes its estimates under $CARGO_TARGET_DIR/criterion, or
# under ./target when that is unset: the workspace's target dir either way.
target=${CARGO_TARGET_DIR:-$(cd .. && pwd)/target}
if [[ $criterion == 1 ]]; then
    CARGO_TARGET_DIR=$target "$bin" --bench "$@" >&2
    EXECUTOR_FAIR_AB=500 "$bin" >"$out_dir/paired"
else
    : >"$out_dir/paired"
fi

python3 - "$results" "$target/criterion" "$criterion" "$out_dir/paired" <<'PY'
import json, os, sys
results, root, with_time, paired_file = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4]
paired = {}
for line in open(paired_file):
    _, w, f, m, s, ns, ratio = line.split()
    paired[(w, f, m, s)] = (float(ns), float(ratio))
instr = {}
for line in open(results):
    w, f, m, s, tenths = line.split()
    instr[(w, f, m, s)] = int(tenths) / 10
def wall(w, f, m, s):
    path = os.path.join(root, f"fair_{w}_{m}", s, f, "new", "estimates.json")
    try:
        est = json.load(open(path))
    except OSError:
        return None
    n = 1020 if m == "fire" else 102
    return est["median"]["point_estimate"] / n
print("\nper event: instructions (callgrind, (I(11,220) - I(1,020)) / 10,200), criterion median wall time, paired timing")
print("| workload | runtime | mode | side | instr | x actor | ns | x actor | paired ns | paired x actor |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for (w, f, m, s), n in instr.items():
    base = instr[(w, f, m, "actor")]
    t, tb = (wall(w, f, m, s), wall(w, f, m, "actor")) if with_time else (None, None)
    ts = f"{t:.1f} | {t / tb:.2f}" if t and tb else "- | -"
    pn, pr = paired.get((w, f, m, s), (None, None))
    ps = f"{pn:.1f} | {pr:.2f}" if pn else "- | -"
    print(f"| {w} | {f} | {m} | {s} | {n:,.1f} | {n / base:.3f} | {ts} | {ps} |")
PY
