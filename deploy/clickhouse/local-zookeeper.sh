#!/usr/bin/env bash
# Starts a throwaway standalone ZooKeeper (Debian's `zookeeper` package) on
# 127.0.0.1 with all its state under one directory: what a ClickHouse
# cluster's replicated tables and ON CLUSTER statements need. Used by the
# cluster tests (`ingest::clickhouse::LocalCluster`).
#
#   deploy/clickhouse/local-zookeeper.sh DIR PORT
#
# Prints `127.0.0.1:PORT` once the server serves requests; its pid is in
# DIR/pid. With WATCH_PID set, it is also stopped once that process has
# exited.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/watch-pid.sh"

dir=$(realpath -m "${1:?usage: local-zookeeper.sh DIR PORT}")
port=${2:?usage: local-zookeeper.sh DIR PORT}
jar=/usr/share/java/zookeeper.jar
if [ ! -r "$jar" ]; then
    echo "no $jar: install Debian's zookeeper package (.ci/run does)" >&2
    exit 1
fi
mkdir -p "$dir/data"

cat > "$dir/zoo.cfg" <<CFG
tickTime=500
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=srvr
CFG
cat > "$dir/log4j.properties" <<CFG
log4j.rootLogger=WARN, F
log4j.appender.F=org.apache.log4j.FileAppender
log4j.appender.F.File=$dir/zookeeper.log
log4j.appender.F.layout=org.apache.log4j.PatternLayout
log4j.appender.F.layout.ConversionPattern=%d %p %c: %m%n
CFG

java -Xmx256m -Dlog4j.configuration="file:$dir/log4j.properties" -cp "$jar" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" \
    >"$dir/stdout.log" 2>&1 </dev/null &
echo $! >"$dir/pid"
stop_with_watched "$(cat "$dir/pid")" "$dir"

# `srvr` answers "Mode: standalone" once the server serves sessions (`ruok`
# answers before that).
for _ in $(seq 1 150); do
    # (`timeout`: a server that takes the connection but never answers must
    # not hang the caller.)
    if timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf srvr >&3 && cat <&3' _ "$port" 2>/dev/null | grep -q '^Mode: standalone'; then
        echo "127.0.0.1:$port"
        exit 0
    fi
    if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
        echo "zookeeper exited; see $dir" >&2
        tail -n 20 "$dir/stdout.log" "$dir/zookeeper.log" >&2 || true
        exit 1
    fi
    sleep 0.2
done
echo "zookeeper did not serve on port $port" >&2
exit 1
