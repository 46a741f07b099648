#!/usr/bin/env bash
# Instructions per event (callgrind Ir) of the generated `Loom::handle_event`
# against the hand-written baseline `HandLoom` (benches/support/hand.rs), on
# the traces of benches/dispatch.rs: (a) a text turn, (b) a tool loop, and the
# flatness streams (1,000 TextDelta with 10 / 100 / 1,000 / 10,000 messages
# in the conversation).
#
# Only `run_gen` / `run_hand` (the loop feeding the events,
# #[inline(never)]) is counted, via --toggle-collect: dispatch, the row
# bodies and dropping each event and action; nothing of building the traces.
# Columns:
#   total/ev   all instructions counted, per event
#   disp/ev    self instructions of the feeding loop and the dispatch
#              functions it calls (both `handle_event`s are inlined into
#              it; the generated `__settle` is not), per event: the
#              allocator and the drops of events and actions are excluded
#
# Usage: scripts/callgrind_dispatch.sh            (DISPATCH_REPS=5 by default)
set -euo pipefail
cd "$(dirname "$0")/.."

command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
reps=${DISPATCH_REPS:-5}

bin=$(scripts/bench_exe.sh dispatch)
echo "binary: $bin"

# The lockstep check (same actions and states, no catch-all), once, natively.
DISPATCH_CALLGRIND=gen-a DISPATCH_REPS=1 "$bin" 2>&1 >/dev/null | sed 's/^/check: /'

out=$(mktemp -d /tmp/callgrind_dispatch.XXXXXX)
count() { # <gen|hand> <trace> -> "total_Ir dispatch_self_Ir events"
    local which=$1 trace=$2
    DISPATCH_VERIFY=0 DISPATCH_REPS=$reps DISPATCH_CALLGRIND="$which-$trace" \
        scripts/callgrind_count.sh "$out" "$which-$trace" "*run_$which*" \
        'run_(gen|hand)\b|Loom::handle_event|Loom::__settle|HandLoom::' "$bin"
}

printf '%-10s %7s | %9s %9s %8s | %8s %8s %8s\n' \
    trace events gen/ev hand/ev gen/hand disp:gen hand gen/hand
for trace in a b flat10 flat100 flat1000 flat10000; do
    read -r gir gd gev < <(count gen "$trace")
    read -r hir hd hev < <(count hand "$trace")
    python3 - "$trace" "$gir" "$gd" "$gev" "$hir" "$hd" "$hev" <<'PY'
import sys
t = sys.argv[1]
gir, gd, gev, hir, hd, hev = map(int, sys.argv[2:])
assert gev == hev, "event counts differ"
g, h = gir / gev, hir / hev
dg, dh = gd / gev, hd / hev
print(f"{t:<10} {gev // 1:>7} | {g:>9.1f} {h:>9.1f} {g / h:>8.3f} | "
      f"{dg:>8.1f} {dh:>8.1f} {dg / dh:>8.3f}")
PY
done
echo "(per event; $reps runs of each trace; callgrind files in $out)"
