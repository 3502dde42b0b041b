#!/bin/sh
# The official image's entrypoint, as far as deploy/compose.yaml uses it: on an empty data volume, a
# cluster whose superuser is POSTGRES_USER with POSTGRES_PASSWORD, the database POSTGRES_DB, and password
# (SCRAM) authentication for every host; then postgres listening on all addresses, as the postgres user.
set -eu
if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" && chown postgres:postgres "$PGDATA" && chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?is required, as the official image requires it}"
  user=${POSTGRES_USER:-postgres}
  database=${POSTGRES_DB:-$user}
  secret=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$secret"
  initdb --username="$user" --pwfile="$secret" --auth-local=trust --auth-host=scram-sha-256 -D "$PGDATA"
  rm -f "$secret"
  echo 'host all all all scram-sha-256' >> "$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
  if [ "$database" != postgres ]; then
    pg_ctl -D "$PGDATA" -w -o "-c listen_addresses=''" start
    psql -v ON_ERROR_STOP=1 --username="$user" --dbname=postgres -c "CREATE DATABASE \"$database\""
    pg_ctl -D "$PGDATA" -m fast -w stop
  fi
fi
exec "$@"
