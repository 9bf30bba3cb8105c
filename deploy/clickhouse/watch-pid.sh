# Sourced by the local-*.sh scripts: `stop_with_watched SERVER_PID` stops
# that server once the process WATCH_PID (if set) has exited, so that a
# server shared by a test process's tests goes with the process.
stop_with_watched() {
    local server=$1
    [ -n "${WATCH_PID:-}" ] || return 0
    (
        while kill -0 "$WATCH_PID" 2>/dev/null && kill -0 "$server" 2>/dev/null; do sleep 1; done
        kill "$server" 2>/dev/null || true
    ) </dev/null >/dev/null 2>&1 &
}
