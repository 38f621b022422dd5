#!/usr/bin/env bash
# The shared stack a team runs the loop against: an MLflow tracking server backed by PostgreSQL, its artifacts
# served through the server (clients get `mlflow-artifacts:` URIs, never a path of the server's machine), and a
# DVC remote on a shared directory. One person's default (sqlite:///mlruns.db, DVC's local cache) needs none of it.
#
#   scripts/stack.sh up             start PostgreSQL (scripts/postgres.sh, database `mlflow`) and the MLflow server
#                                   (idempotent: what already runs is left running); prints the `env` lines
#   scripts/stack.sh down           stop the MLflow server (its process group) and PostgreSQL (idempotent)
#   scripts/stack.sh status         say what runs (exit 0 when the tracking server answers, else 3)
#   scripts/stack.sh env            print the `export` lines a job needs (MLFLOW_TRACKING_URI, the registry's lock,
#                                   the DVC remote)
#   scripts/stack.sh remote [REPO]  make the shared remote REPO's default DVC remote (default: this checkout), in
#                                   REPO's .dvc/config.local, so the committed .dvc/config stays as it is
#   scripts/stack.sh pull|push [REPO]  `dvc pull` / `dvc push` through that remote, after checking it is there: a
#                                   shared directory that is not mounted fails in one line (DVC itself would push
#                                   into an empty local folder, or report missing cache files over several lines)
#
# Variables: AGENTLOOP_STACK_DIR (default .stack/ in the repository: the server's log and pid, its artifacts, the
# PostgreSQL cluster and the DVC remote), AGENTLOOP_STACK_PORT (the MLflow server's port, default 55000),
# AGENTLOOP_PG_PORT (PostgreSQL's, default 55433 here), AGENTLOOP_PG_DIR (default STACK_DIR/pg),
# AGENTLOOP_DVC_REMOTE (the remote's name, default `team`), AGENTLOOP_DVC_REMOTE_URL (default STACK_DIR/dvc-remote:
# point it at a directory every member mounts), PYTHON (the interpreter that runs `mlflow server`).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
stack="${AGENTLOOP_STACK_DIR:-$here/.stack}"
port="${AGENTLOOP_STACK_PORT:-55000}"
remote_name="${AGENTLOOP_DVC_REMOTE:-team}"
python="${PYTHON:-python}"
export AGENTLOOP_PG_DIR="${AGENTLOOP_PG_DIR:-$stack/pg}"
export AGENTLOOP_PG_PORT="${AGENTLOOP_PG_PORT:-55433}"
pidfile="$stack/mlflow.pid"
marker=".agentloop-dvc-remote"  # written by `up`: a directory without it is not the remote (an unmounted share)
log="$stack/mlflow.log"
artifacts="$stack/artifacts"
STARTUP_S="${AGENTLOOP_STACK_STARTUP_S:-180}"

die() {
    echo "stack.sh: $*" >&2
    exit 1
}

usage() {
    echo "usage: scripts/stack.sh up | down | status | env | remote [REPO] | pull [REPO] | push [REPO]" >&2
    exit 2
}

[[ "$port" =~ ^[0-9]+$ ]] && ((port > 0 && port < 65536)) || die "AGENTLOOP_STACK_PORT '$port': expected a TCP port"
[[ "$remote_name" =~ ^[A-Za-z0-9_-]+$ ]] || die "AGENTLOOP_DVC_REMOTE '$remote_name': letters, digits, _ and - only"

mkdir -p "$stack"
stack="$(cd "$stack" && pwd)"
remote_url="${AGENTLOOP_DVC_REMOTE_URL:-$stack/dvc-remote}"
url="http://127.0.0.1:$port"

healthy() {
    "$python" -c 'import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=2) as r:
    sys.exit(0 if r.status == 200 else 1)' "$url/health" 2>/dev/null
}

# The server's process (group) id, when the one this stack started is alive.
server_pid() {
    local pid
    pid="$(cat "$pidfile" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

env_lines() {
    echo "export MLFLOW_TRACKING_URI=$url"
    # the registry's alias moves take a PostgreSQL advisory lock in the MLflow database (compare-and-set)
    echo "export AGENTLOOP_REGISTRY_LOCK_URL=$("$here/scripts/postgres.sh" url mlflow 9>&-)"
    echo "export AGENTLOOP_DVC_REMOTE=$remote_name"
    echo "export AGENTLOOP_DVC_REMOTE_URL=$remote_url"
}

up() {
    mkdir -p "$artifacts"
    if [ ! -f "$remote_url/$marker" ]; then
        mkdir -p "$remote_url" && echo "a DVC remote of agentloop's shared stack" >"$remote_url/$marker" ||
            die "cannot create the DVC remote at $remote_url"
    fi
    exec 9>"$stack/lock"
    flock -w 300 9 || die "another 'stack.sh up' or 'down' holds $stack/lock"
    local pg
    pg="$("$here/scripts/postgres.sh" start mlflow 9>&-)" || die "PostgreSQL did not start (scripts/postgres.sh start mlflow)"
    if server_pid >/dev/null; then
        wait_healthy "$(server_pid)"
        env_lines
        return
    fi
    if healthy; then
        die "$url already answers, but not a server of $stack: stop it or set AGENTLOOP_STACK_PORT"
    fi
    # psycopg 3 as MLflow's PostgreSQL driver (SQLAlchemy's postgresql+psycopg dialect)
    local backend="postgresql+psycopg://${pg#postgresql://}"
    # A session of its own (setsid): the server and its workers are one process group, stopped as one.
    MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false MLFLOW_DISABLE_TELEMETRY=true \
        setsid "$python" -m mlflow server --host 127.0.0.1 --port "$port" --workers 1 \
        --backend-store-uri "$backend" --serve-artifacts --artifacts-destination "$artifacts" \
        </dev/null >"$log" 2>&1 9>&- &
    echo $! >"$pidfile"
    wait_healthy "$!"
    env_lines
}

wait_healthy() {
    local pid="$1" deadline=$((SECONDS + STARTUP_S))
    until healthy; do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 15 "$log" >&2 || true
            rm -f "$pidfile"
            die "the MLflow server exited on start (log: $log)"
        fi
        ((SECONDS < deadline)) || die "the MLflow server did not answer $url/health within ${STARTUP_S}s (log: $log)"
        sleep 0.5
    done
}

down() {
    exec 9>"$stack/lock"
    flock -w 300 9 || die "another 'stack.sh up' or 'down' holds $stack/lock"
    local pid
    if pid="$(server_pid)"; then
        kill -TERM -- "-$pid" 2>/dev/null || true
        for _ in $(seq 1 40); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        kill -KILL -- "-$pid" 2>/dev/null || true
        echo "mlflow: stopped"
    else
        echo "mlflow: not running"
    fi
    rm -f "$pidfile"
    echo "postgres: $("$here/scripts/postgres.sh" stop 9>&-)"
}

status() {
    local rc=0
    if server_pid >/dev/null && healthy; then
        echo "mlflow: running at $url (pid $(server_pid), artifacts: $artifacts, log: $log)"
    else
        echo "mlflow: not running ($url)"
        rc=3
    fi
    echo "postgres: $("$here/scripts/postgres.sh" status || true)"
    echo "dvc remote: $remote_name -> $remote_url"
    return "$rc"
}

# One line when the remote is not there (or, for a push, not writable).
check_remote() {
    [ -f "$remote_url/$marker" ] ||
        die "DVC remote $remote_name ($remote_url) is not reachable: no $marker there (not mounted, or run 'scripts/stack.sh up')"
    [ "${1:-}" != push ] || [ -w "$remote_url" ] || die "DVC remote $remote_name ($remote_url) is not writable"
}

dvc_repo() {
    local repo="${1:-$here}"
    [ -d "$repo/.dvc" ] || die "$repo: not a DVC repository (no .dvc/)"
    echo "$repo"
}

remote() {
    local repo
    repo="$(dvc_repo "${1:-}")"
    check_remote
    (cd "$repo" && dvc remote add --local --default --force "$remote_name" "$remote_url" >/dev/null) ||
        die "could not add DVC remote $remote_name in $repo"
    echo "dvc remote $remote_name -> $remote_url (default, in $repo/.dvc/config.local)"
}

transfer() {
    local verb="$1" repo out rc=0
    repo="$(dvc_repo "${2:-}")"
    check_remote "$verb"
    out="$(cd "$repo" && dvc "$verb" -r "$remote_name" 2>&1)" || rc=$?
    if [ "$rc" != 0 ]; then
        echo "$out" >&2
        die "dvc $verb through $remote_name ($remote_url) failed: $(grep -m1 '^ERROR' <<<"$out" || tail -n1 <<<"$out")"
    fi
    echo "$out"
}

command="${1:-}"
[ $# -gt 0 ] && shift
case "$command" in
up | down | status | env)
    [ $# -eq 0 ] || usage
    case "$command" in
    up) up ;;
    down) down ;;
    status) status ;;
    env) env_lines ;;
    esac
    ;;
remote)
    [ $# -le 1 ] || usage
    remote "${1:-}"
    ;;
pull | push)
    [ $# -le 1 ] || usage
    transfer "$command" "${1:-}"
    ;;
*) usage ;;
esac
