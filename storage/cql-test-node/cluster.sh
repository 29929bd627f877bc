#!/usr/bin/env bash
# A three-node Apache Cassandra 5.0 cluster on 127.0.0.1, 127.0.0.2 and 127.0.0.3 (loopback
# addresses need no setup on Linux), the same ports on each, for the tests that lose a node:
#   cluster.sh start          three nodes (127.0.0.1 the seed), each owning a third of the ring;
#                             prints `SCYLLA_URI=127.0.0.1:P,127.0.0.2:P,127.0.0.3:P` as its last
#                             line once all three serve CQL and each sees the other two up
#   cluster.sh kill N         kill -9 node N (1-3)
#   cluster.sh start-node N   node N again, with its data; returns once it serves and the
#                             others see it up
#   cluster.sh stop           ends every node and removes the cluster's dir when it was a temp dir
# Environment: CQL_CLUSTER_DIR (work dir; default a fresh temp dir, remembered in .cluster-dir
# beside this file for the later commands), CQL_CACHE, CASSANDRA_JAVA (as start.sh),
# CQL_CLUSTER_HEAP (each node's heap, default 768M).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${CQL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gatehouse/cql-node}"
source "$here/node-lib.sh"
heap="${CQL_CLUSTER_HEAP:-768M}"
# Each node's token: the Murmur3 ring cut in three.
tokens=(-9223372036854775808 -3074457345618258603 3074457345618258602)

cluster_dir() {
    local dir="${CQL_CLUSTER_DIR:-$(cat "$here/.cluster-dir" 2>/dev/null || true)}"
    [ -n "$dir" ] && [ -f "$dir/ports" ] || { echo "cql-cluster: not started" >&2; exit 1; }
    echo "$dir"
}

# A port free on all three addresses.
common_port() {
    python3 - <<'PY'
import socket
for _ in range(100):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
    try:
        for a in ("127.0.0.2", "127.0.0.3"):
            t = socket.socket(); t.bind((a, port)); t.close()
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
PY
}

check_node() {
    case "${1:-}" in 1 | 2 | 3) ;; *) echo "cql-cluster: a node is 1, 2 or 3" >&2; exit 2 ;; esac
}

# launch DIR N: node N's configuration (its data kept when CQL_KEEP_DATA=1) and its JVM.
launch() {
    local dir="$1" n="$2" port storage_port
    read -r port storage_port < "$dir/ports"
    cql_configure "$dir/n$n" "127.0.0.$n" "127.0.0.1:$storage_port" "$port" "$storage_port" \
        "$(printf 'initial_token: %s\nauto_bootstrap: false\nhinted_handoff_enabled: true\nphi_convict_threshold: 6' "${tokens[$((n - 1))]}")"
    # Where the other nodes' logs stand: `sees_up` reads only what follows.
    local m
    for m in 1 2 3; do
        [ "$m" = "$n" ] || [ ! -f "$dir/n$m/logs/system.log" ] \
            || wc -l < "$dir/n$m/logs/system.log" > "$dir/n$m/since.$n"
    done
    # A restarted node starts a fresh log, so the wait below reads this start's lines.
    if [ -f "$dir/n$n/logs/system.log" ]; then
        mv "$dir/n$n/logs/system.log" "$dir/n$n/logs/system.log.$(date +%s)"
    fi
    rm -f "$dir/n$n"/since.*
    cql_launch "$dir/n$n" "$heap" -Dcassandra.ring_delay_ms=3000 \
        -Dcassandra.consistent.rangemovement=false
}

# running DIR N: node N's JVM is alive.
running() {
    local pid
    pid="$(cat "$1/n$2/cassandra.pid" 2>/dev/null || true)"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# sees_up DIR N OTHER: node N's log says node OTHER is up, in the lines written since OTHER
# was launched (see `launch`).
sees_up() {
    local from
    from="$(cat "$1/n$2/since.$3" 2>/dev/null || echo 0)"
    tail -n "+$((from + 1))" "$1/n$2/logs/system.log" 2>/dev/null \
        | grep -q "/127.0.0.$3:[0-9]* is now UP"
}

# until_up DIR N [SECONDS]: node N serves CQL, and it and every other running node see each other.
until_up() {
    local dir="$1" n="$2" seconds="${3:-180}" port storage_port m
    read -r port storage_port < "$dir/ports"
    cql_wait "$dir/n$n" "127.0.0.$n" "$port" "$seconds"
    for _ in $(seq 1 $((seconds * 2))); do
        local all=1
        for m in 1 2 3; do
            [ "$m" = "$n" ] && continue
            running "$dir" "$m" || continue
            if ! sees_up "$dir" "$n" "$m" || ! sees_up "$dir" "$m" "$n"; then all=0; fi
        done
        [ "$all" = 1 ] && return 0
        sleep 0.5
    done
    echo "cql-cluster: node $n and the others do not see each other after $seconds s" >&2
    return 1
}

cmd="${1:-}"
case "$cmd" in
start)
    cql_prepare
    dir="${CQL_CLUSTER_DIR:-$(mktemp -d /tmp/cql-cluster.XXXXXX)}"
    mkdir -p "$dir"
    port="$(common_port)"
    storage_port="$(common_port)"
    echo "$port $storage_port" > "$dir/ports"
    echo "$dir" > "$here/.cluster-dir"
    started=$(date +%s)
    # The seed first, then the other two together (no bootstrap: each owns its token at once).
    launch "$dir" 1
    until_up "$dir" 1 || { "$0" stop; exit 1; }
    launch "$dir" 2
    launch "$dir" 3
    until_up "$dir" 2 && until_up "$dir" 3 || { "$0" stop; exit 1; }
    echo "cql-cluster: three nodes up in $(($(date +%s) - started)) s (dir $dir)" >&2
    echo "SCYLLA_URI=127.0.0.1:$port,127.0.0.2:$port,127.0.0.3:$port"
    ;;
kill)
    check_node "${2:-}"
    dir="$(cluster_dir)"
    kill -9 "$(cat "$dir/n$2/cassandra.pid")" 2>/dev/null || true
    for _ in $(seq 1 100); do running "$dir" "$2" || break; sleep 0.1; done
    echo "cql-cluster: node $2 killed" >&2
    ;;
start-node)
    check_node "${2:-}"
    dir="$(cluster_dir)"
    if running "$dir" "$2"; then
        echo "cql-cluster: node $2 is running" >&2
        exit 1
    fi
    cql_prepare
    CQL_KEEP_DATA=1 launch "$dir" "$2"
    until_up "$dir" "$2"
    echo "cql-cluster: node $2 back" >&2
    ;;
stop)
    dir="${CQL_CLUSTER_DIR:-$(cat "$here/.cluster-dir" 2>/dev/null || true)}"
    [ -n "$dir" ] || { echo "cql-cluster: not running" >&2; exit 0; }
    for n in 1 2 3; do
        pid="$(cat "$dir/n$n/cassandra.pid" 2>/dev/null || true)"
        [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    done
    for n in 1 2 3; do
        pid="$(cat "$dir/n$n/cassandra.pid" 2>/dev/null || true)"
        [ -n "$pid" ] || continue
        for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -9 "$pid" 2>/dev/null || true
    done
    rm -f "$here/.cluster-dir"
    case "$dir" in /tmp/cql-cluster.*) rm -rf "$dir" ;; esac
    echo "cql-cluster: stopped" >&2
    ;;
*)
    echo "usage: cluster.sh start | kill N | start-node N | stop" >&2
    exit 2
    ;;
esac
