#!/usr/bin/env bash
# Runs a bench executable once under callgrind, counting only what runs
# inside the functions matching <toggle> (valgrind's --toggle-collect), and
# prints "total self events":
#   total   every instruction counted;
#   self    the self instructions of the functions whose names match the
#           Python regex <self> (0 when it is empty);
#   events  what the run printed as `events=N` (how many events it fed).
# The caller sets the environment that tells the executable what to run.
# Used by scripts/callgrind_dispatch.sh and benches/dispatch-peers/callgrind.sh.
#
# Usage: scripts/callgrind_count.sh <out dir> <tag> <toggle> <self> <executable>
set -euo pipefail
out=$1 tag=$2 toggle=$3 self=$4 bin=$5

events=$(valgrind --tool=callgrind --callgrind-out-file="$out/cg.$tag.%p" \
    --toggle-collect="$toggle" "$bin" 2>"$out/log.$tag" | sed -n 's/^events=//p')
file=$(ls "$out"/cg."$tag".*)
# --auto=no: with debug info in the build, the annotated source lines that
# follow would be read as functions too (a line that mentions one matches).
callgrind_annotate --inclusive=no --auto=no --threshold=100 "$file" 2>/dev/null |
    python3 -c '
import re, sys
pattern, events = sys.argv[1], sys.argv[2]
total = own = 0
for line in sys.stdin:
    m = re.match(r"\s*([\d,]+)\s+(\(\s*[\d.]+%\)\s+)?(.*)$", line)
    if not m:
        continue
    n, what = int(m.group(1).replace(",", "")), m.group(3)
    if "PROGRAM TOTALS" in what:
        total = n
    elif pattern and re.search(pattern, what):
        own += n
print(total, own, events)
' "$self" "$events"
