#!/usr/bin/env bash
# Starts a throwaway ClickHouse server (Debian's `clickhouse-server`) on
# 127.0.0.1 with all its state under one directory; no system service, no
# root-owned paths. Used by `.ci/run`, the tests and the benchmarks.
#
#   deploy/clickhouse/local-server.sh DIR [HTTP_PORT] [TCP_PORT]
#
# Prints the HTTP URL once the server answers /ping; the server's pid is in
# DIR/pid. Stop it with `kill "$(cat DIR/pid)"`. With WATCH_PID set, the
# server is also stopped once that process has exited (a test run that
# shares one server between its tests). With EXTRA_CONFIG set, that XML is
# added inside the server's configuration (a cluster's <zookeeper>,
# <remote_servers>, <macros> and <distributed_ddl>); with WAIT_FOR_ZOOKEEPER
# set, the URL is printed only once the server has its ZooKeeper session
# (18.16 can crash on an ON CLUSTER statement that comes before it). With
# LOG_QUERIES set, every query is logged in system.query_log.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/watch-pid.sh"

dir=$(realpath -m "${1:?usage: local-server.sh DIR [HTTP_PORT] [TCP_PORT]}")
http_port=${2:-8123}
tcp_port=${3:-9000}
mkdir -p "$dir/data" "$dir/tmp" "$dir/user_files" "$dir/format_schemas" "$dir/log"

cat > "$dir/users.xml" <<XML
<?xml version="1.0"?>
<yandex>
    <profiles><default><max_memory_usage>4000000000</max_memory_usage>${LOG_QUERIES:+<log_queries>1</log_queries>}</default></profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
        <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
    </interval></default></quotas>
</yandex>
XML

cat > "$dir/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
    <logger>
        <level>warning</level>
        <log>$dir/log/server.log</log>
        <errorlog>$dir/log/server.err.log</errorlog>
        <size>100M</size>
        <count>2</count>
    </logger>
    <query_log>
        <database>system</database>
        <table>query_log</table>
        <flush_interval_milliseconds>1000</flush_interval_milliseconds>
    </query_log>
    <http_port>$http_port</http_port>
    <tcp_port>$tcp_port</tcp_port>
    <listen_host>127.0.0.1</listen_host>
    <max_connections>256</max_connections>
    <keep_alive_timeout>3</keep_alive_timeout>
    <max_concurrent_queries>100</max_concurrent_queries>
    <uncompressed_cache_size>1073741824</uncompressed_cache_size>
    <mark_cache_size>536870912</mark_cache_size>
    <path>$dir/data/</path>
    <tmp_path>$dir/tmp/</tmp_path>
    <user_files_path>$dir/user_files/</user_files_path>
    <format_schema_path>$dir/format_schemas/</format_schema_path>
    <users_config>$dir/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <builtin_dictionaries_reload_interval>3600</builtin_dictionaries_reload_interval>
    <max_session_timeout>3600</max_session_timeout>
    <default_session_timeout>60</default_session_timeout>
${EXTRA_CONFIG:-}
</yandex>
XML

clickhouse-server --config-file="$dir/config.xml" >"$dir/log/stdout.log" 2>&1 &
echo $! >"$dir/pid"
stop_with_watched "$(cat "$dir/pid")" "$dir"

for _ in $(seq 1 100); do
    if curl -fsS --max-time 5 "http://127.0.0.1:$http_port/ping" >/dev/null 2>&1; then
        if [ -z "${WAIT_FOR_ZOOKEEPER:-}" ] || curl -fsS --max-time 5 "http://127.0.0.1:$http_port/" \
            --data-binary "SELECT count() FROM system.zookeeper WHERE path = '/'" >/dev/null 2>&1; then
            echo "http://127.0.0.1:$http_port"
            exit 0
        fi
    fi
    if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
        echo "clickhouse-server exited; see $dir/log" >&2
        tail -n 20 "$dir/log/stdout.log" "$dir/log/server.err.log" >&2 || true
        exit 1
    fi
    sleep 0.2
done
echo "clickhouse-server did not answer /ping on port $http_port" >&2
exit 1
