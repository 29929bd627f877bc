# Shared by start.sh (one node) and cluster.sh (three): the JDK, Cassandra's jars, a node's
# configuration, its JVM and the wait until it serves CQL. Sourced, not run.
# Callers set `here` (this folder) and `cache` (the jar cache) first.

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Sets `java` (a JDK 17), `lib` (Cassandra's jars, fetched once) and `jamm` (its agent).
cql_prepare() {
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
}

# cql_configure DIR ADDRESS SEEDS CQL_PORT STORAGE_PORT [EXTRA_YAML]: a fresh data dir (unless
# CQL_KEEP_DATA=1) and the node's cassandra.yaml and logback.xml.
cql_configure() {
    local node="$1" address="$2" seeds="$3" port="$4" storage_port="$5" extra="${6:-}"
    if [ "${CQL_KEEP_DATA:-0}" != 1 ]; then rm -rf "$node/data" "$node/logs"; fi
    mkdir -p "$node/conf" "$node/data" "$node/logs" "$node/tmp"
    cat > "$node/conf/cassandra.yaml" <<YAML
cluster_name: gatehouse-test
num_tokens: 1
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "$seeds"
listen_address: $address
rpc_address: $address
storage_port: $storage_port
native_transport_port: $port
native_transport_allow_older_protocols: true
commitlog_sync: periodic
commitlog_sync_period: 10000ms
commitlog_segment_size: 8MiB
auto_snapshot: false
incremental_backups: false
snapshot_before_compaction: false
memtable_allocation_type: heap_buffers
concurrent_compactors: 1
storage_compatibility_mode: NONE
cas_contention_timeout: 1000ms
write_request_timeout: 5000ms
read_request_timeout: 5000ms
$extra
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
}

# cql_launch DIR HEAP [JVM_FLAGS...]: starts the node's JVM in the background; its PID goes to
# DIR/cassandra.pid.
cql_launch() {
    local node="$1" heap="$2"
    shift 2
    local flags=(
        -ea -da:net.openhft... -XX:+UseThreadPriorities -Xss256k -XX:+UseTLAB -XX:+ResizeTLAB
        -XX:+PerfDisableSharedMem -XX:+ExitOnOutOfMemoryError "-XX:HeapDumpPath=$node/logs"
        "-Xms$heap" "-Xmx$heap"
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
        -Dcassandra.load_ring_state=false
        "-Djava.io.tmpdir=$node/tmp" "-Djna.tmpdir=$node/tmp"
        "$@"
    )
    (cd "$node" && exec nohup "$java" "${flags[@]}" -cp "$lib/*" \
        org.apache.cassandra.service.CassandraDaemon > "$node/logs/stdout.log" 2>&1) &
    echo $! > "$node/cassandra.pid"
}

# cql_wait DIR ADDRESS PORT [SECONDS]: until the node says it started and CQL answers on
# ADDRESS:PORT (a cold start takes 10-40 s here); fails with its last log lines.
cql_wait() {
    local node="$1" address="$2" port="$3" seconds="${4:-120}" pid
    pid="$(cat "$node/cassandra.pid")"
    for _ in $(seq 1 $((seconds * 2))); do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "cql-test-node: Cassandra in $node exited; last log lines:" >&2
            tail -40 "$node/logs/stdout.log" "$node/logs/system.log" >&2 2>/dev/null || true
            return 1
        fi
        if grep -q "Startup complete" "$node/logs/system.log" 2>/dev/null \
            && (exec 3<>"/dev/tcp/$address/$port") 2>/dev/null; then
            return 0
        fi
        sleep 0.5
    done
    echo "cql-test-node: $node not ready after $seconds s" >&2
    tail -40 "$node/logs/system.log" >&2 2>/dev/null || true
    return 1
}
