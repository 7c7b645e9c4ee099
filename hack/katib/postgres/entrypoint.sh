#!/usr/bin/env bash
# The entrypoint of hack/katib/postgres/Dockerfile: what the official postgres image's
# docker-entrypoint.sh does for the env Katib's components/postgres/postgres.yaml sets
# (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB, PGDATA), nothing more: no initdb.d scripts,
# no POSTGRES_INITDB_ARGS or *_FILE variables.
set -euo pipefail

# Options alone (`-c name=value`) are postgres's, as the official image takes them.
if [[ $# -eq 0 || "$1" == -* ]]; then
  set -- postgres "$@"
fi
[[ "$1" == postgres ]] || exec "$@"

export PGDATA="${PGDATA:-/var/lib/postgresql/data}"
POSTGRES_USER="${POSTGRES_USER:-postgres}"
POSTGRES_DB="${POSTGRES_DB:-${POSTGRES_USER}}"

# Started as root (the Deployment sets no user): the data folder, root's on a new volume, and the
# socket folder become the postgres user's, then this script runs again as that user. setpriv
# execs in place, so postgres ends up as the container's PID 1 and gets the kubelet's signals.
if [[ "$(id -u)" == 0 ]]; then
  mkdir -p "${PGDATA}" /var/run/postgresql
  chown -R postgres:postgres "${PGDATA}" /var/run/postgresql
  chmod 0700 "${PGDATA}"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "${BASH_SOURCE[0]}" "$@"
fi

# An empty data folder: a new cluster whose superuser is POSTGRES_USER with POSTGRES_PASSWORD (as
# in the official image; Katib's DB manager logs in as it), listening on every address, SCRAM
# password logins from anywhere (the official image's default since PostgreSQL 14; initdb stores
# the password as SCRAM then), trust on the container's own socket, and the database POSTGRES_DB.
if [[ ! -s "${PGDATA}/PG_VERSION" ]]; then
  [[ -n "${POSTGRES_PASSWORD:-}" ]] || { echo "POSTGRES_PASSWORD is not set" >&2; exit 1; }
  initdb --username="${POSTGRES_USER}" --pwfile=<(printf '%s\n' "${POSTGRES_PASSWORD}") \
    --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8
  echo "host all all all scram-sha-256" >> "${PGDATA}/pg_hba.conf"
  echo "listen_addresses = '*'" >> "${PGDATA}/postgresql.conf"
  if [[ "${POSTGRES_DB}" != postgres ]]; then
    # Single-user mode needs no server or socket; the name is quoted as an SQL identifier.
    printf 'CREATE DATABASE "%s"\n' "${POSTGRES_DB//\"/\"\"}" \
      | postgres --single -D "${PGDATA}" postgres >/dev/null
  fi
fi
exec "$@"
