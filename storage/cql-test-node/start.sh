#!/usr/bin/env bash
# Starts a single-node Apache Cassandra 5.0 (a real CQL server: ScyllaDB's protocol, LWT, TTL
# and batches) for the storage tests, on loopback, in its own JVM process:
#   - fetches cassandra-all and its runtime jars with Maven into a cache folder (once);
#   - writes a minimal cassandra.yaml (fresh data dir every run, fast single-node start);
#   - starts org.apache.cassandra.service.CassandraDaemon on JDK 17 with the flags it needs;
#   - waits until CQL answers and prints `SCYLLA_URI=127.0.0.1:<port>` as its last line.
# Environment: CQL_NODE_DIR (work dir, default a fresh temp dir), CQL_PORT (default: a free one),
# CQL_CACHE (jar cache, default ~/.cache/gatehouse/cql-node), CASSANDRA_JAVA (a JDK 17 `java`),
# CQL_EXTRA_YAML (more cassandra.yaml lines, e.g. the node's thread pools sized for a benchmark:
# $'concurrent_reads: 2\nconcurrent_writes: 2\nnative_transport_max_threads: 2'),
# CQL_JMX_PORT (JMX on 127.0.0.1 for nodetool, e.g. `java -cp "$CQL_CACHE/lib/*"
# org.apache.cassandra.tools.NodeTool -p $CQL_JMX_PORT tablestats`; default off).
# stop.sh (beside this file) ends the node by its PID.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${CQL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gatehouse/cql-node}"
source "$here/node-lib.sh"
node="${CQL_NODE_DIR:-$(mktemp -d /tmp/cql-node.XXXXXX)}"
port="${CQL_PORT:-$(free_port)}"
storage_port="${CQL_STORAGE_PORT:-$(free_port)}"

cql_prepare
# One node owns the whole ring; no hints (there is no other node to hint for).
cql_configure "$node" 127.0.0.1 "127.0.0.1:$storage_port" "$port" "$storage_port" \
    "$(printf 'initial_token: 0\nhinted_handoff_enabled: false\n%s' "${CQL_EXTRA_YAML:-}")"
# A throwaway node: its system tables need not survive a crash.
cql_launch "$node" 1G -Xmx2G -Dcassandra.unsafesystem=true \
    ${CQL_JMX_PORT:+"-Dcassandra.jmx.local.port=$CQL_JMX_PORT"}
pid="$(cat "$node/cassandra.pid")"
echo "$node" > "$here/.node-dir"
if ! cql_wait "$node" 127.0.0.1 "$port"; then
    kill "$pid" 2>/dev/null || true
    exit 1
fi
echo "cql-test-node: ready (pid $pid, dir $node)" >&2
echo "SCYLLA_URI=127.0.0.1:$port"
