#!/usr/bin/env bash
# Instructions per event (callgrind Ir) of the executor with the inspector:
# the ping-pong agent of the executor bench fed N events, counted inside
# `measured` (benches/inspector.rs: the worker, the inspector's task, the
# server and a page's client all run there, on one thread). Each mode runs
# with 2,000 and 12,000 events; the difference over 10,000 is the cost per
# event, without the setup's.
#   unattached, feature off   the executor as without the inspector
#   unattached, feature on    the same, with `inspector` compiled in
#   attached                  attached, no page open
#   page                      attached, one page reading every update
#
# Usage: scripts/callgrind_inspector.sh   (builds agent-fsm's `inspector`
# bench in $CARGO_TARGET_DIR, twice)
set -euo pipefail
cd "$(dirname "$0")/../agent-fsm"
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }

off=$(../scripts/bench_exe.sh inspector)
cp "$off" /tmp/inspector-bench-off
on=$(cargo bench --features inspector --bench inspector --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "inspector" and m.get("executable"):
        print(m["executable"])')
out=$(mktemp -d /tmp/callgrind_inspector.XXXXXX)
per_event() { # <tag> <binary> <mode>
    local tag=$1 bin=$2 mode=$3 a b
    read -r a _ _ < <(INSPECTOR_BENCH=$mode INSPECTOR_EVENTS=2000 ../scripts/callgrind_count.sh "$out" "$tag-2k" '*measured*' '' "$bin")
    read -r b _ _ < <(INSPECTOR_BENCH=$mode INSPECTOR_EVENTS=12000 ../scripts/callgrind_count.sh "$out" "$tag-12k" '*measured*' '' "$bin")
    printf '%-28s %8.0f Ir/event\n' "$tag" "$(python3 -c "print(($b - $a) / 10000)")"
}
per_event "unattached, feature off" /tmp/inspector-bench-off unattached
per_event "unattached, feature on" "$on" unattached
per_event "attached, no page" "$on" attached
per_event "attached, page open" "$on" page
