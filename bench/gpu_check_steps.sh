# Sourced by bench/gpu_check*.sh: one result line per step (`$CHECK STEP ok|FAIL SECONDS DETAILS`), each
# step's output in a log of its own, the first failure ending the check with the log's tail.
# The sourcing script sets CHECK (the lines' first word) first.
T0=$SECONDS
step_start() { STEP_T0=$SECONDS; }
result() {  # result NAME STATUS DETAILS...
    local name="$1" status="$2"
    shift 2
    printf '%s %-14s %-4s %5ds  %s\n' "$CHECK" "$name" "$status" "$((SECONDS - STEP_T0))" "$*"
}
fail() {  # fail NAME LOG
    result "$1" FAIL "see $2"
    tail -n 40 "$2" >&2 || true
    exit 1
}
run_logged() {  # run_logged NAME LOG CMD...: run CMD with its output in LOG; a failure ends the check
    local name="$1" log="$2"
    shift 2
    "$@" >"$log" 2>&1 || fail "$name" "$log"
}
