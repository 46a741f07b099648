#!/usr/bin/env bash
# Instructions per streamed event through each provider's layers (the
# variants of agent-fsm/benches/providers.rs): the parser alone, the parser
# into a machine, and the loopback replay server through reqwest, the
# parser and the executor (one event per read, and 16 KiB reads). Each
# variant runs under callgrind with 1 and with 11 replies; the difference
# over 10 × 1,001 events is the cost per event, without the setup. User
# space only: the kernel's side of the socket calls is not counted.
#
# (A child process the TLS setup starts is left out: the last total is the
# bench's own.)
#
# Usage: scripts/callgrind_providers.sh
set -euo pipefail
cd "$(dirname "$0")/../agent-fsm"

command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
bin=$(cargo bench --bench providers --features openai,anthropic --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "providers" and m.get("executable"):
        print(m["executable"])
')
out=$(mktemp -d)
count() {
    PROVIDERS_COUNT=$1 PROVIDERS_REPS=$2 valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$bin" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p' | tail -1
    rm -f "$out/cg"
}
printf '%-40s %s\n' variant instr/event
for provider in openai anthropic; do
    for variant in parser parser_machine replay_executor replay_executor_16k; do
        one=$(count "$provider/$variant" 1)
        eleven=$(count "$provider/$variant" 11)
        printf '%-40s %s\n' "$provider/$variant" "$(( (eleven - one) / 10010 ))"
    done
done
rm -rf "$out"
