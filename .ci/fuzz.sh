#!/usr/bin/env bash
# Runs every cargo-fuzz target in api/fuzz for a bounded time (FUZZ_SECONDS, default 30 each).
# Installs cargo-fuzz if missing. cargo-fuzz passes -Z flags to rustc: RUSTC_BOOTSTRAP=1 lets the
# project's own (stable) toolchain take them, so no nightly is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${FUZZ_SECONDS:-30}"
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install --quiet --locked cargo-fuzz --version '^0.13'
fi
export RUSTC_BOOTSTRAP=1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for target in $(cargo fuzz list --fuzz-dir api/fuzz); do
    echo "== fuzz $target (${secs}s)"
    if ! cargo fuzz run --fuzz-dir api/fuzz "$target" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 > "$log" 2>&1; then
        tail -60 "$log"
        echo "fuzz target $target failed (the input is in api/fuzz/artifacts/$target/)"
        exit 1
    fi
    grep -E "^stat::number_of_executed_units|^Done" "$log" || tail -3 "$log"
done
