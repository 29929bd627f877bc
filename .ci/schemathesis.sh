#!/usr/bin/env bash
# Property-based API testing with schemathesis (PyPI) against the real server and the committed
# OpenAPI document: no answer may be a 5xx, and every answer must match the document (schema
# and content type). Run by .ci/run after the tests (uses their debug build).
#   SCHEMATHESIS_EXAMPLES (default 25) examples per operation; SCHEMATHESIS_SEED (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/python-env.sh
st="$(dirname "$TEST_PYTHON")/schemathesis"
if [ ! -x "$st" ]; then
    "$TEST_PYTHON" -m pip install --quiet --disable-pip-version-check 'schemathesis>=4,<5'
fi
cargo build --quiet -p gatehouse-api --bin gatehouse
dir=$(mktemp -d)
key=schemathesis-server-key-0123456789abcdef
GATEHOUSE_LISTEN=127.0.0.1:0 GATEHOUSE_BASE_URL=http://localhost:3000 GATEHOUSE_DATA_DIR="$dir/data" GATEHOUSE_SERVER_KEY=$key \
GATEHOUSE_PASSWORD__ARGON2_MEMORY_KIB=1024 GATEHOUSE_PASSWORD__ARGON2_ITERATIONS=1 \
GATEHOUSE_LIMITS__INVITATIONS_PER_ORGANIZATION_PER_DAY=0 \
GATEHOUSE_LIMITS__INVITATIONS_PER_INVITER_PER_DAY=0 GATEHOUSE_RATE_LIMIT__ENABLED=false RUST_LOG=warn \
    target/debug/gatehouse > "$dir/server.out" 2> "$dir/server.err" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 1 100); do
    grep -q "listening on" "$dir/server.out" 2>/dev/null && break
    sleep 0.1
done
addr=$(sed -n 's/^gatehouse listening on //p' "$dir/server.out")
[ -n "$addr" ] || { echo "gatehouse did not start"; cat "$dir/server.err"; exit 1; }
base="http://$addr/api/auth"
cookie=$(curl -sf -D - -o /dev/null -X POST "$base/sign-up/email" -H 'Content-Type: application/json' \
    -d '{"name":"Schema","email":"schema@example.com","password":"schema-password-1"}' \
    | sed -n 's/^[Ss]et-[Cc]ookie: \([^;]*\);.*/\1/p' | head -1)
[ -n "$cookie" ] || { echo "no session cookie from sign-up"; exit 1; }
common=(--url "$base" -H "Cookie: $cookie" -H "Origin: http://localhost:3000"
    -H "Authorization: Bearer $key"
    --checks not_a_server_error,response_schema_conformance,content_type_conformance
    --max-examples "${SCHEMATHESIS_EXAMPLES:-25}" --seed "${SCHEMATHESIS_SEED:-1}"
    --warnings off)
# Operations that end the session run last, on their own, so the others stay signed in.
enders=(/sign-out /revoke-session /revoke-sessions /delete-user)
exclude=()
include=()
for p in "${enders[@]}"; do exclude+=(--exclude-path "$p"); include+=(--include-path "$p"); done
echo "== schemathesis: every operation but the session-ending ones"
"$st" run openapi/openapi.json "${common[@]}" "${exclude[@]}"
echo "== schemathesis: the session-ending operations"
"$st" run openapi/openapi.json "${common[@]}" "${include[@]}"
if grep -q "panicked" "$dir/server.err"; then
    echo "the server panicked:"; grep -A5 panicked "$dir/server.err"; exit 1
fi
