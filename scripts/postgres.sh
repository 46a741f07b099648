#!/usr/bin/env bash
# Starts a throwaway Postgres server on loopback for the Postgres tests, the
# fleet example and the fleet benchmark, and prints the URL to export as
# AGENT_FSM_PG_URL. Installs the server from the system's packages when it
# is missing (Debian/Ubuntu, as root). The cluster lives in target/postgres;
# running the script again reuses a server that is already up.
#
#   export AGENT_FSM_PG_URL=$(scripts/postgres.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
port="${AGENT_FSM_PG_PORT:-54329}"
dir="$PWD/target/postgres"
url="postgres://agent_fsm@127.0.0.1:$port/agent_fsm"

say() { echo "postgres: $*" >&2; }

bin=""
for candidate in "$(command -v pg_ctl 2>/dev/null || true)" /usr/lib/postgresql/*/bin/pg_ctl; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then bin="$(dirname "$(readlink -f "$candidate")")"; break; fi
done
if [ -z "$bin" ]; then
    say "not installed; installing it from the system's packages (apt-get install postgresql)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
    for candidate in /usr/lib/postgresql/*/bin/pg_ctl; do bin="$(dirname "$candidate")"; done
fi

# The server refuses to run as root: run it as the `postgres` user when we are root.
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" 2>/dev/null; then
    say "already running on 127.0.0.1:$port"
else
    if [ ! -f "$dir/PG_VERSION" ]; then
        say "creating a cluster in $dir"
        mkdir -p "$dir"
        [ "$(id -u)" = 0 ] && chown postgres "$dir"
        as_owner "$bin/initdb" -D "$dir" -U postgres --auth=trust -E UTF8 >/dev/null
    fi
    say "starting on 127.0.0.1:$port"
    # fsync stays on: the durability the tests assert is the server's real one.
    as_owner "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w \
        -o "-h 127.0.0.1 -p $port -k /tmp -c max_connections=300 -c shared_buffers=128MB" start >/dev/null
fi
"$bin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 >/dev/null <<SQL
SELECT 'CREATE ROLE agent_fsm LOGIN SUPERUSER' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'agent_fsm')\gexec
SELECT 'CREATE DATABASE agent_fsm OWNER agent_fsm' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'agent_fsm')\gexec
SQL
echo "$url"
