#!/usr/bin/env bash
# Stops the node start.sh started (by its PID) and removes its work dir when it was a temp dir.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
node="${CQL_NODE_DIR:-$(cat "$here/.node-dir" 2>/dev/null || true)}"
[ -n "$node" ] && [ -f "$node/cassandra.pid" ] || { echo "cql-test-node: not running" >&2; exit 0; }
pid=$(cat "$node/cassandra.pid")
kill "$pid" 2>/dev/null
for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
kill -9 "$pid" 2>/dev/null || true
rm -f "$here/.node-dir"
case "$node" in /tmp/cql-node.*) rm -rf "$node" ;; esac
echo "cql-test-node: stopped" >&2
