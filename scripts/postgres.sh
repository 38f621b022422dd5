#!/usr/bin/env bash
# A local PostgreSQL server for agentloop: the example environment's database (examples/postgres_env), and any
# other database a tool wants (an MLflow backend store...). Debian's `postgresql` package (scripts/setup.sh installs
# it); the server runs as its own non-root user, listens on 127.0.0.1 only and trusts local TCP connections.
#
#   scripts/postgres.sh start [DB]   start the server (idempotent) and create database DB (default: agentloop)
#   scripts/postgres.sh stop         stop it (pg_ctl, fast shutdown; idempotent)
#   scripts/postgres.sh status       say whether it runs (exit 0) or not (exit 3)
#   scripts/postgres.sh url [DB]     print the postgresql:// URL of database DB (default: agentloop)
#
# Variables: AGENTLOOP_PG_DIR (default: .pg/ in the repository; the cluster is DIR/data, its log DIR/server.log),
# AGENTLOOP_PG_PORT (default 55432), AGENTLOOP_PG_BIN (the server's bin directory; default: the newest
# /usr/lib/postgresql/*/bin), AGENTLOOP_PG_USER (the system user it runs as when started by root; default postgres
# where that user exists, else agentloop-pg, created). Run as a non-root user, the server runs as that user.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dir="${AGENTLOOP_PG_DIR:-$here/.pg}"
port="${AGENTLOOP_PG_PORT:-55432}"
role=agentloop  # the cluster's superuser, the user in every URL
data="$dir/data"
log="$dir/server.log"

die() {
    echo "postgres.sh: $*" >&2
    exit 1
}

usage() {
    echo "usage: scripts/postgres.sh start [DB] | stop | status | url [DB]" >&2
    exit 2
}

dbname() {
    local db="${1:-agentloop}"
    [[ "$db" =~ ^[A-Za-z_][A-Za-z0-9_]{0,62}$ ]] || die "database name '$db': letters, digits and _ only"
    echo "$db"
}

[[ "$port" =~ ^[0-9]+$ ]] && ((port > 0 && port < 65536)) || die "AGENTLOOP_PG_PORT '$port': expected a TCP port"

url() { echo "postgresql://$role@127.0.0.1:$port/$1"; }

bindir() {
    if [ -n "${AGENTLOOP_PG_BIN:-}" ]; then
        [ -x "$AGENTLOOP_PG_BIN/pg_ctl" ] || die "AGENTLOOP_PG_BIN=$AGENTLOOP_PG_BIN: no pg_ctl there"
        echo "$AGENTLOOP_PG_BIN"
        return
    fi
    local found
    found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    if [ -z "$found" ] && command -v pg_ctl >/dev/null 2>&1; then
        found="$(dirname "$(readlink -f "$(command -v pg_ctl)")")"
    fi
    [ -n "$found" ] && [ -x "$found/initdb" ] ||
        die "no PostgreSQL server binaries (install Debian's postgresql package: scripts/setup.sh does)"
    echo "$found"
}

# The user the server runs as: root may not run it, so root hands it to a system user.
runas() {
    if [ "$(id -u)" != 0 ]; then
        id -un
        return
    fi
    local user="${AGENTLOOP_PG_USER:-}"
    if [ -z "$user" ]; then
        if id postgres >/dev/null 2>&1; then user=postgres; else user=agentloop-pg; fi
    fi
    if ! id "$user" >/dev/null 2>&1; then
        useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user" ||
            die "cannot create the system user $user"
    fi
    echo "$user"
}

# Run a command as the server's user (directly when that is us).
as_pg() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u "$pguser" -- "$@"
    else
        "$@"
    fi
}

running() {
    [ -f "$data/PG_VERSION" ] && as_pg "$bin/pg_ctl" status -D "$data" >/dev/null 2>&1
}

# The port the running server listens on (postmaster.pid's fourth line).
running_port() { as_pg sed -n 4p "$data/postmaster.pid" 2>/dev/null || echo "$port"; }

psql_q() { as_pg "$bin/psql" -X -q -t -A -h 127.0.0.1 -p "$port" -U "$role" -d postgres -v ON_ERROR_STOP=1 "$@"; }

ensure_db() {
    local db="$1"
    if [ "$(psql_q -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]; then
        # two starts at once may both try: the loser's "already exists" is fine
        as_pg "$bin/createdb" -h 127.0.0.1 -p "$port" -U "$role" "$db" 2>/dev/null ||
            [ "$(psql_q -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" = 1 ] ||
            die "could not create database $db"
    fi
}

start() {
    local db
    db="$(dbname "${1:-}")"
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then
        chown "$pguser" "$dir"
        chmod 700 "$dir"
        as_pg test -w "$dir" ||
            die "$dir: the server's user $pguser cannot write there (a folder above it is closed to it); set AGENTLOOP_PG_DIR"
    fi
    if [ ! -f "$data/PG_VERSION" ]; then
        as_pg "$bin/initdb" -D "$data" -U "$role" --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
            die "initdb failed (see $dir/initdb.log)"
        {
            echo "# agentloop (scripts/postgres.sh): local TCP only"
            echo "listen_addresses = '127.0.0.1'"
            echo "unix_socket_directories = ''"
            echo "max_connections = 200"
            echo "fsync = off"  # a scratch database for episodes and tests: speed over crash safety
            echo "synchronous_commit = off"
            echo "full_page_writes = off"
            echo "tcp_keepalives_idle = 30"  # a client that vanished without closing its socket is noticed
            echo "tcp_keepalives_interval = 10"
            echo "tcp_keepalives_count = 3"
        } | as_pg tee -a "$data/postgresql.conf" >/dev/null
        printf 'host all all 127.0.0.1/32 trust\n' | as_pg tee "$data/pg_hba.conf" >/dev/null
    fi
    if running; then
        [ "$(running_port)" = "$port" ] ||
            die "the server of $dir already runs on port $(running_port), not $port (AGENTLOOP_PG_PORT): stop it first"
    else
        as_pg "$bin/pg_ctl" start -D "$data" -l "$log" -w -t 60 -o "-p $port" >/dev/null 2>&1 || {
            tail -n 5 "$log" >&2 2>/dev/null || true
            die "the server did not start on 127.0.0.1:$port (log: $log)"
        }
    fi
    ensure_db "$db"
    url "$db"
}

stop() {
    if running; then
        as_pg "$bin/pg_ctl" stop -D "$data" -m fast -w -t 60 >/dev/null || die "pg_ctl stop failed (log: $log)"
        echo "stopped"
    else
        echo "not running"
    fi
}

status() {
    if running; then
        echo "running on 127.0.0.1:$(running_port) (data: $data)"
    else
        echo "not running (data: $data)"
        exit 3
    fi
}

command="${1:-}"
[ $# -gt 0 ] && shift
case "$command" in
url)
    [ $# -le 1 ] || usage
    url "$(dbname "${1:-}")"
    ;;
start | stop | status)
    bin="$(bindir)"
    pguser="$(runas)"
    case "$command" in
    start)
        [ $# -le 1 ] || usage
        start "${1:-}"
        ;;
    stop)
        [ $# -eq 0 ] || usage
        stop
        ;;
    status)
        [ $# -eq 0 ] || usage
        status
        ;;
    esac
    ;;
*) usage ;;
esac
