#!/usr/bin/env bash
# Instructions per event (callgrind Ir) of the Loom machine written with
# smlang, rust-fsm and statig, against the generated `Loom` and the
# hand-written baseline `HandLoom`, on the two traces of
# benches/dispatch_peers.rs: (a) a text turn, (b) a tool loop.
#
# Only `run_<machine>` (the loop feeding the events, #[inline(never)]) is
# counted, via --toggle-collect: dispatch, the row bodies, each peer's
# conversions, and dropping each event and action; nothing of building the
# machines or the traces. `x hand` is the ratio to the hand-written machine.
#
# Usage: benches/dispatch-peers/callgrind.sh      (DISPATCH_REPS=5 by default)
set -euo pipefail
cd "$(dirname "$0")"

command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
reps=${DISPATCH_REPS:-5}
machines=(gen hand smlang rust_fsm statig)

bin=$(../../scripts/bench_exe.sh dispatch_peers)
echo "binary: $bin"

# The lockstep check (same actions and states as hand, no catch-all), once,
# natively.
PEERS_DISPATCH_CALLGRIND=hand-a DISPATCH_REPS=1 "$bin" 2>&1 >/dev/null | sed 's/^/check: /'

out=$(mktemp -d /tmp/callgrind_dispatch_peers.XXXXXX)
count() { # <machine> <trace> -> "total_Ir events"
    local which=$1 trace=$2 total events
    read -r total _ events < <(PEERS_DISPATCH_VERIFY=0 DISPATCH_REPS=$reps PEERS_DISPATCH_CALLGRIND="$which-$trace" \
        ../../scripts/callgrind_count.sh "$out" "$which-$trace" "*run_$which*" "" "$bin")
    echo "$total $events"
}

results="$out/results"
: >"$results"
for trace in a b; do
    for m in "${machines[@]}"; do
        read -r ir ev < <(count "$m" "$trace")
        echo "$trace $m $ir $ev" >>"$results"
    done
done

python3 - "$results" "$reps" <<'PY'
import sys
rows = [line.split() for line in open(sys.argv[1])]
per = {(t, m): int(ir) / int(ev) for t, m, ir, ev in rows}
events = {t: int(ev) // int(sys.argv[2]) for t, _, _, ev in rows}
machines = list(dict.fromkeys(m for _, m, _, _ in rows))
print(f"{'machine':<10} | {'a Ir/ev':>9} {'x hand':>7} | {'b Ir/ev':>9} {'x hand':>7}")
print("-" * 11 + "+" + "-" * 19 + "+" + "-" * 18)
for m in machines:
    cells = []
    for t in ("a", "b"):
        v, h = per[(t, m)], per[(t, "hand")]
        cells.append(f"{v:>9.1f} {v / h:>7.3f}")
    print(f"{m:<10} | {cells[0]} | {cells[1]}")
print(f"(a: {events['a']} events, b: {events['b']} events per run; {sys.argv[2]} runs of each)")
PY
echo "(callgrind files in $out)"
