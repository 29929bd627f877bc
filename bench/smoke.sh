#!/usr/bin/env bash
# Smoke run of every gatehouse-bench scenario against the real gatehouse binary on a loopback
# port with a temporary data dir: a few seconds each, low concurrency, zero errors allowed.
# No speed is asserted (figures live in bench/README.md). Uses the dev build of both binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet -p gatehouse-api -p gatehouse-bench --bins
dir=$(mktemp -d)
log="$dir/server.out"
GATEHOUSE_LISTEN=127.0.0.1:0 GATEHOUSE_BASE_URL=http://localhost:3000 GATEHOUSE_DATA_DIR="$dir/data" \
GATEHOUSE_PASSWORD__ARGON2_MEMORY_KIB=1024 GATEHOUSE_PASSWORD__ARGON2_ITERATIONS=1 \
GATEHOUSE_ORGANIZATION__REQUIRE_EMAIL_VERIFICATION_ON_INVITATION=false \
GATEHOUSE_SESSION__COOKIE_CACHE__ENABLED=true GATEHOUSE_RATE_LIMIT__ENABLED=false RUST_LOG=warn \
GATEHOUSE_SERVER_KEY=bench-smoke-server-key-0123456789abcdef \
GATEHOUSE_WEBHOOKS__ALLOW_HTTP=true GATEHOUSE_WEBHOOKS__ALLOW_PRIVATE_ADDRESSES=true \
    target/debug/gatehouse > "$log" 2> "$dir/server.err" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 1 100); do
    grep -q "listening on" "$log" 2>/dev/null && break
    sleep 0.1
done
addr=$(sed -n 's/^gatehouse listening on //p' "$log")
[ -n "$addr" ] || { echo "gatehouse did not start"; cat "$dir/server.err"; exit 1; }
passed=0
failed=0
# org-write+webhook: the organizations' member events delivered to the harness's receiver.
for run in ok sign-up sign-in sign-in-two-factor get-session get-session-no-cache mixed org org-read org-write org-write+webhook api-key; do
    scenario=${run%+webhook}
    extra=()
    [ "$run" != "$scenario" ] && extra=(--webhook)
    if GATEHOUSE_SERVER_KEY=bench-smoke-server-key-0123456789abcdef \
        target/debug/gatehouse-bench --url "http://$addr" --origin "http://localhost:3000" \
        --scenario "$scenario" --duration 2s --warmup 500ms --concurrency 4 --max-errors 0 --quiet \
        "${extra[@]}" > "$dir/$run.txt" 2>&1; then
        passed=$((passed + 1))
        echo "bench smoke $run: ok ($(grep -o '[0-9.]* req/s' "$dir/$run.txt" | head -1))"
        if [ "$run" != "$scenario" ] && ! grep -q "webhook deliveries received: [1-9]" "$dir/$run.txt"; then
            failed=$((failed + 1))
            echo "bench smoke $run: no webhook delivery arrived"
        fi
    else
        failed=$((failed + 1))
        echo "bench smoke $run: FAILED"
        cat "$dir/$run.txt"
    fi
done
echo "smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
