#!/usr/bin/env bash
# Builds a bench target without running it and prints the path of its
# executable, read from cargo's own report (the file name carries a hash, so
# it cannot be guessed). Used by the callgrind scripts.
#
# Usage: scripts/bench_exe.sh <bench target name>   (from the package's folder)
set -euo pipefail
name=${1:?usage: bench_exe.sh <bench target name>}
exe=$(cargo bench --bench "$name" --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
exe = ""
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == sys.argv[1] and m.get("executable"):
        exe = m["executable"]
print(exe)
' "$name")
[ -n "$exe" ] && [ -x "$exe" ] || { echo "could not build or find the $name bench executable" >&2; exit 1; }
echo "$exe"
