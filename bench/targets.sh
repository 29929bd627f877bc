#!/usr/bin/env bash
# The #16 targets in one run (bench/README.md, "The #16 targets"): two release servers on fresh
# data dirs (A: defaults; C: the cookie cache on), every scenario 15 s at concurrency 32 one
# after the other, the sign-in storm, peak memory, and live actors once the load has stopped.
# Usage: cargo build --release -p gatehouse-api -p gatehouse-bench && bash bench/targets.sh
# Environment: PORT_A / PORT_C / PORT_M (default 4901 / 4902 / 4911), WAIT_IDLE (seconds to
# wait before counting live actors again, default 95: the idle timeout of 60 s, checked every
# 30 s), DURATION (each scenario, default 15s), STORM (the sign-ins, default 30s) and
# STORM_DELAY (seconds into the storm get-session starts, default 8), ROUND (the interleaved
# rounds of get-session against /ok, default 5s), GATEHOUSE_BIN and
# BENCH_BIN (default: the release binaries). CI runs it briefly on the debug build, so that it
# keeps working; its figures are the release build's.
set -euo pipefail
cd "$(dirname "$0")/.."
gh=${GATEHOUSE_BIN:-target/release/gatehouse}
bench=${BENCH_BIN:-target/release/gatehouse-bench}
duration=${DURATION:-15s}
[ -x "$gh" ] && [ -x "$bench" ] || { echo "build first: cargo build --release -p gatehouse-api -p gatehouse-bench"; exit 2; }
a=${PORT_A:-4901} c=${PORT_C:-4902} m=${PORT_M:-4911}
dir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$dir"' EXIT
serve() { # port, then extra VAR=value
    local port=$1
    shift
    mkdir -p "$dir/$port"
    env GATEHOUSE_DATA_DIR="$dir/$port" GATEHOUSE_LISTEN="127.0.0.1:$port" \
        GATEHOUSE_BASE_URL="http://127.0.0.1:$port" GATEHOUSE_RATE_LIMIT__ENABLED=false \
        GATEHOUSE_ORGANIZATION__REQUIRE_EMAIL_VERIFICATION_ON_INVITATION=false \
        GATEHOUSE_LIMITS__INVITATIONS_PER_ORGANIZATION_PER_DAY=0 \
        GATEHOUSE_LIMITS__INVITATIONS_PER_INVITER_PER_DAY=0 "$@" "$gh" > "$dir/$port.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 1 100); do
        curl -sf "http://127.0.0.1:$port/api/auth/ok" > /dev/null && return
        sleep 0.1
    done
    echo "the server on $port did not start"; cat "$dir/$port.log"; exit 1
}
serve "$a" GATEHOUSE_METRICS_LISTEN="127.0.0.1:$m"
pid_a=${pids[0]}
serve "$c" GATEHOUSE_SESSION__COOKIE_CACHE__ENABLED=true
pid_c=${pids[1]}
# run NAME PORT SCENARIO CONCURRENCY DURATION [harness flags]: prints req/s, p50, p99 and keeps
# the output.
run() {
    "$bench" --url "http://127.0.0.1:$2" --scenario "$3" --concurrency "$4" --duration "$5" \
        --quiet --max-errors 0 "${@:6}" > "$dir/$1.txt" 2>&1 || { cat "$dir/$1.txt"; exit 1; }
    rps "$1"
}
rps() {
    local t l
    # The first server's or scenario's (A's) figures.
    t=$(awk '/throughput/ {print $2; exit}' "$dir/$1.txt")
    l=$(awk '/latency ms/ {print $4, $8; exit}' "$dir/$1.txt")
    printf '%-28s %10s req/s   p50 / p99 ms %s\n' "$1" "$t" "$l"
}
val() { awk "/$2/ {print \$$3}" "$dir/$1.txt"; }
share() { awk -v x="$(val "$1" throughput 2)" -v y="$(val "$2" throughput 2)" 'BEGIN {printf "%.1f %%", 100 * x / y}'; }
for s in ok get-session-no-cache org-read org-write; do run "$s" "$a" "$s" 32 "$duration"; done
# The same share measured with /ok in interleaved rounds, so that the machine's swings (±10 %
# between two runs on a shared host) hit both alike.
run get-session-versus-ok "$a" get-session-no-cache 32 "$duration" --versus ok --round "${ROUND:-5s}"
run ok-c "$c" ok 32 "$duration"
run get-session-cookie-cache "$c" get-session 32 "$duration"
# The storm: 8 clients signing in (30 s); get-session measured inside it (from second 8).
"$bench" --url "http://127.0.0.1:$a" --scenario sign-in --concurrency 8 --duration "${STORM:-30s}" \
    --quiet > "$dir/sign-in-storm.txt" 2>&1 &
storm=$!
sleep "${STORM_DELAY:-8}"
run get-session-in-the-storm "$a" get-session-no-cache 32 "$duration"
wait "$storm" || { cat "$dir/sign-in-storm.txt"; exit 1; }
rps sign-in-storm
echo
echo "get-session, cookie cache off: $(share get-session-no-cache ok) of /ok, p99 $(val get-session-no-cache 'latency ms' 8) ms (targets: 50 %, 2 ms)"
echo "  interleaved with /ok:         $(awk '/throughput x/ {printf "%.1f %%", 100 * substr($2, 2)}' "$dir/get-session-versus-ok.txt") of /ok"
echo "get-session, cookie cache on:  $(share get-session-cookie-cache ok-c) of /ok (target: 80 %)"
echo "organization read:             $(share org-read ok) of /ok (target: 30 %)"
echo "organization write:            $(share org-write ok) of /ok (target: 10 %)"
echo "get-session p99 in the storm:  x$(awk -v s="$(val get-session-in-the-storm 'latency ms' 8)" -v r="$(val get-session-no-cache 'latency ms' 8)" 'BEGIN {printf "%.2f", s / r}') of at rest (target: 2)"
echo "peak RSS: A $(awk '/VmHWM/ {print $2}' /proc/$pid_a/status) kB, C $(awk '/VmHWM/ {print $2}' /proc/$pid_c/status) kB (target: 100 MB)"
live() { curl -s "http://127.0.0.1:$m/metrics" | awk '/^gatehouse_actors_live/ {printf "%s ", $0}'; }
echo "live actors as the load stops: $(live)"
sleep "${WAIT_IDLE:-95}"
echo "live actors ${WAIT_IDLE:-95} s later: $(live)"
