# Sourced by the local-*.sh scripts: `stop_with_watched SERVER_PID DIR`
# stops that server once the process WATCH_PID (if set) has exited, so that
# a server shared by a test process's tests goes with the process. With
# WATCH_REMOVE=1 it then also deletes DIR, the server's state: such a
# server's temporary directory is held by a static of the test process,
# which is never dropped (each test run left some 300 MB in /tmp). Only
# once the watched process is gone: a server stopped by a test is started
# again on its directory.
stop_with_watched() {
    local server=$1 dir=${2:-}
    [ -n "${WATCH_PID:-}" ] || return 0
    (
        while kill -0 "$WATCH_PID" 2>/dev/null && kill -0 "$server" 2>/dev/null; do sleep 1; done
        kill "$server" 2>/dev/null || true
        if [ "${WATCH_REMOVE:-}" = 1 ] && [ -n "$dir" ] && ! kill -0 "$WATCH_PID" 2>/dev/null; then
            for _ in $(seq 1 120); do kill -0 "$server" 2>/dev/null || break; sleep 0.5; done
            rm -rf -- "$dir"
        fi
    ) </dev/null >/dev/null 2>&1 &
}
