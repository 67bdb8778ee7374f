#!/usr/bin/env bash
# A throwaway PostgreSQL server for the test suite (the `seqgate dispatch` tests).
#
#   bash scripts/postgres.sh          # ensure it runs; print its URL as the last line
#   bash scripts/postgres.sh stop     # stop it (the data directory stays, for a fast restart)
#
# Idempotent: a server already running from the data directory is reused (well under a
# second). Otherwise: install Debian's `postgresql` package when no server binaries are found
# and we are root (apt-get), `initdb` a private cluster (trust authentication, listening on
# 127.0.0.1 only) in $SEQGATE_PG_DIR (default /var/tmp/seqgate-postgres) on a free port, start
# it and create the `seqgate` database (about 2 s; the package install, when needed, ~30 s).
# The server runs as the `postgres` user when we are root (PostgreSQL refuses root), as the
# current user otherwise. It never touches the distribution's own `main` cluster.
set -euo pipefail

DATA_DIR="${SEQGATE_PG_DIR:-/var/tmp/seqgate-postgres}"
PGDATA="$DATA_DIR/data"
USER_NAME=seqgate
DB_NAME=seqgate

find_bindir() {
  local candidate
  if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"
    return 0
  fi
  for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$candidate/pg_ctl" ] && [ -x "$candidate/initdb" ]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

BINDIR="$(find_bindir || true)"
if [ -z "$BINDIR" ]; then
  if [ "${1:-}" = "stop" ]; then
    exit 0
  fi
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "postgres.sh: no PostgreSQL server binaries (pg_ctl, initdb) and cannot install them" \
      "(needs root and apt-get): install PostgreSQL or set SEQGATE_TEST_POSTGRES_URL" >&2
    exit 1
  fi
  echo "postgres.sh: installing Debian's postgresql package" >&2
  export DEBIAN_FRONTEND=noninteractive
  # Only the binaries are needed: keep the package from creating its own cluster.
  mkdir -p /etc/postgresql-common
  if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
    echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf
  fi
  apt-get install -y -qq --no-install-recommends postgresql >/dev/null \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql >/dev/null; }
  BINDIR="$(find_bindir)"
fi

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

running_port() {
  # The port of the server running from $PGDATA, if one is.
  if [ -f "$PGDATA/postmaster.pid" ] && as_owner "$BINDIR/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
    sed -n 4p "$PGDATA/postmaster.pid"
    return 0
  fi
  return 1
}

if [ "${1:-}" = "stop" ]; then
  if running_port >/dev/null; then
    as_owner "$BINDIR/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
    echo "postgres.sh: stopped the server in $PGDATA" >&2
  fi
  exit 0
fi

if ! port="$(running_port)"; then
  mkdir -p "$DATA_DIR"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$DATA_DIR"
  fi
  if [ ! -f "$PGDATA/PG_VERSION" ]; then
    as_owner "$BINDIR/initdb" -D "$PGDATA" -U "$USER_NAME" --auth=trust -E UTF8 --locale=C \
      --no-sync >"$DATA_DIR/initdb.log" 2>&1 \
      || { cat "$DATA_DIR/initdb.log" >&2; exit 1; }
  fi
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  as_owner "$BINDIR/pg_ctl" -D "$PGDATA" -l "$DATA_DIR/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$DATA_DIR -c fsync=off -c max_connections=50" \
    start >/dev/null || { tail -n 20 "$DATA_DIR/server.log" >&2; exit 1; }
fi

if ! as_owner "$BINDIR/psql" -h 127.0.0.1 -p "$port" -U "$USER_NAME" -d postgres -tAc \
  "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'" | grep -q 1; then
  as_owner "$BINDIR/createdb" -h 127.0.0.1 -p "$port" -U "$USER_NAME" "$DB_NAME"
fi
echo "postgresql://$USER_NAME@127.0.0.1:$port/$DB_NAME"
