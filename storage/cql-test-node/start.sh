#!/usr/bin/env bash
# Starts a single-node Apache Cassandra 5.0 (a real CQL server: ScyllaDB's protocol, LWT, TTL
# and batches) for the storage tests, on loopback, in its own JVM process:
#   - fetches cassandra-all and its runtime jars with Maven into a cache folder (once);
#   - writes a minimal cassandra.yaml (fresh data dir every run, fast single-node start);
#   - starts org.apache.cassandra.service.CassandraDaemon on JDK 17 with the flags it needs;
#   - waits until CQL answers and prints `SCYLLA_URI=127.0.0.1:<port>` as its last line.
# Environment: CQL_NODE_DIR (work dir, default a fresh temp dir), CQL_PORT (default: a free one),
# CQL_CACHE (jar cache, default ~/.cache/gatehouse/cql-node), CASSANDRA_JAVA (a JDK 17 `java`).
# stop.sh (beside this file) ends the node by its PID.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${CQL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gatehouse/cql-node}"
node="${CQL_NODE_DIR:-$(mktemp -d /tmp/cql-node.XXXXXX)}"
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
port="${CQL_PORT:-$(free_port)}"
storage_port="${CQL_STORAGE_PORT:-$(free_port)}"

java="${CASSANDRA_JAVA:-}"
if [ -z "$java" ]; then
    for candidate in /usr/lib/jvm/java-17-openjdk-amd64/bin/java "$(command -v java || true)"; do
        if [ -x "$candidate" ] && "$candidate" -version 2>&1 | grep -q 'version "17\.'; then
            java="$candidate"
            break
        fi
    done
fi
[ -n "$java" ] || { echo "cql-test-node: a JDK 17 is needed (set CASSANDRA_JAVA)" >&2; exit 1; }

lib="$cache/lib"
if [ ! -f "$cache/.complete" ]; then
    echo "cql-test-node: fetching Cassandra with Maven into $lib" >&2
    rm -rf "$lib"
    mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$lib" >&2
    touch "$cache/.complete"
fi
jamm="$(ls "$lib"/jamm-*.jar | head -1)"

rm -rf "$node/data" "$node/logs"
mkdir -p "$node/conf" "$node/data" "$node/logs" "$node/tmp"
cat > "$node/conf/cassandra.yaml" <<YAML
cluster_name: gatehouse-test
num_tokens: 1
initial_token: 0
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "127.0.0.1:$storage_port"
listen_address: 127.0.0.1
rpc_address: 127.0.0.1
storage_port: $storage_port
native_transport_port: $port
native_transport_allow_older_protocols: true
commitlog_sync: periodic
commitlog_sync_period: 10000ms
commitlog_segment_size: 8MiB
auto_snapshot: false
incremental_backups: false
snapshot_before_compaction: false
hinted_handoff_enabled: false
memtable_allocation_type: heap_buffers
concurrent_compactors: 1
storage_compatibility_mode: NONE
cas_contention_timeout: 1000ms
write_request_timeout: 5000ms
read_request_timeout: 5000ms
YAML
cat > "$node/conf/logback.xml" <<'XML'
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${cassandra.logdir}/system.log</file>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
XML

flags=(
    -ea -da:net.openhft... -XX:+UseThreadPriorities -Xss256k -XX:+UseTLAB -XX:+ResizeTLAB
    -XX:+PerfDisableSharedMem -XX:+ExitOnOutOfMemoryError "-XX:HeapDumpPath=$node/logs"
    -Xms1G -Xmx2G
    -XX:+UseG1GC -XX:+ParallelRefProcEnabled -XX:MaxTenuringThreshold=1
    -XX:MaxGCPauseMillis=300 -XX:InitiatingHeapOccupancyPercent=70
    -Djdk.attach.allowAttachSelf=true
    --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
    --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
    --add-exports java.management/com.sun.jmx.remote.security=ALL-UNNAMED
    --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
    --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
    --add-exports java.sql/java.sql=ALL-UNNAMED
    --add-exports java.base/java.lang.ref=ALL-UNNAMED
    --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED
    --add-opens java.base/java.lang.module=ALL-UNNAMED
    --add-opens java.base/jdk.internal.loader=ALL-UNNAMED
    --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
    --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
    --add-opens java.base/jdk.internal.math=ALL-UNNAMED
    --add-opens java.base/jdk.internal.module=ALL-UNNAMED
    --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED
    --add-opens java.base/java.io=ALL-UNNAMED
    --add-opens java.base/java.lang.reflect=ALL-UNNAMED
    --add-opens java.base/java.lang=ALL-UNNAMED
    --add-opens java.base/java.util=ALL-UNNAMED
    --add-opens java.base/java.nio=ALL-UNNAMED
    -Dio.netty.tryReflectionSetAccessible=true
    -Dio.netty.allocator.useCacheForAllThreads=true -Dio.netty.allocator.maxOrder=11
    -Djava.net.preferIPv4Stack=true -Dchronicle.analytics.disable=true
    "-javaagent:$jamm"
    "-Dcassandra.config=file://$node/conf/cassandra.yaml"
    "-Dcassandra.storagedir=$node/data"
    "-Dcassandra.logdir=$node/logs"
    "-Dlogback.configurationFile=$node/conf/logback.xml"
    -Dcassandra-foreground=yes
    -Dcassandra.skip_wait_for_gossip_to_settle=0
    -Dcassandra.unsafesystem=true
    -Dcassandra.load_ring_state=false
    "-Djava.io.tmpdir=$node/tmp" "-Djna.tmpdir=$node/tmp"
)
cd "$node"
nohup "$java" "${flags[@]}" -cp "$lib/*" org.apache.cassandra.service.CassandraDaemon \
    > "$node/logs/stdout.log" 2>&1 &
pid=$!
echo "$pid" > "$node/cassandra.pid"
echo "$node" > "$here/.node-dir"

# Wait until the node says it is ready and CQL answers (a cold start takes 10-40 s here).
for _ in $(seq 1 240); do
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "cql-test-node: Cassandra exited; last log lines:" >&2
        tail -40 "$node/logs/stdout.log" "$node/logs/system.log" >&2 2>/dev/null || true
        exit 1
    fi
    if grep -q "Startup complete" "$node/logs/system.log" 2>/dev/null \
        && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        echo "cql-test-node: ready (pid $pid, dir $node)" >&2
        echo "SCYLLA_URI=127.0.0.1:$port"
        exit 0
    fi
    sleep 0.5
done
echo "cql-test-node: not ready after 120 s" >&2
tail -40 "$node/logs/system.log" >&2 2>/dev/null || true
kill "$pid" 2>/dev/null || true
exit 1
