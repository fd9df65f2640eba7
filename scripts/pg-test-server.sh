#!/bin/sh
# A throwaway PostgreSQL for the test suite: `start` prints a SQLAlchemy URL (nothing when no
# server can be run here: then the PostgreSQL tests skip), `stop` removes it again. `pause` stops
# the server and keeps its data, `resume` starts it again on the same port (the outage test).
# Uses Debian's postgresql binaries; installs them with apt when root and missing.
set -u
PORT=${NUMASCOPE_PG_PORT:-54329}
DATA=${NUMASCOPE_PG_DATA:-/tmp/numascope-test-pg}
action=${1:-start}

pgbin() {
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

run_as_postgres() {
    if [ "$(id -u)" = "0" ]; then
        su postgres -s /bin/sh -c "$1"
    else
        sh -c "$1"
    fi
}

case "$action" in
start)
    BIN=$(pgbin)
    if [ -z "$BIN" ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing Debian's postgresql for the database tests" >&2
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >/dev/null 2>&1
        BIN=$(pgbin)
    fi
    [ -n "$BIN" ] || { echo "note: no PostgreSQL binaries; PostgreSQL tests will skip" >&2; exit 0; }
    if [ "$(id -u)" = "0" ] && ! id postgres >/dev/null 2>&1; then
        echo "note: no postgres user; PostgreSQL tests will skip" >&2; exit 0
    fi
    run_as_postgres "$BIN/pg_ctl -D $DATA stop -m immediate" >/dev/null 2>&1
    rm -rf "$DATA" && mkdir -p "$DATA"
    [ "$(id -u)" = "0" ] && chown postgres "$DATA"
    if ! run_as_postgres "$BIN/initdb -D $DATA -A trust -U postgres" >/dev/null 2>&1 ||
        ! run_as_postgres "$BIN/pg_ctl -D $DATA -l $DATA/server.log -w -o '-p $PORT -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off' start" >/dev/null 2>&1; then
        echo "note: PostgreSQL did not start; PostgreSQL tests will skip" >&2; exit 0
    fi
    echo "postgresql+psycopg://postgres@127.0.0.1:$PORT/postgres"
    ;;
pause)
    run_as_postgres "$(pgbin)/pg_ctl -D $DATA stop -m fast" >/dev/null
    ;;
resume)
    run_as_postgres "$(pgbin)/pg_ctl -D $DATA -l $DATA/server.log -w -o '-p $PORT -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off' start" >/dev/null
    ;;
stop)
    BIN=$(pgbin)
    [ -n "$BIN" ] && [ -d "$DATA" ] && run_as_postgres "$BIN/pg_ctl -D $DATA stop -m fast" >/dev/null 2>&1
    rm -rf "$DATA"
    exit 0
    ;;
*)
    echo "usage: $0 start|stop|pause|resume" >&2; exit 2
    ;;
esac
