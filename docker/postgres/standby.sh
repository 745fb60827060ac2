#!/bin/bash
# db-replica: the first time, a base backup of db (streaming the WAL it needs, and -R: a standby
# that follows db); then PostgreSQL as a hot standby. Runs as the image's postgres user.
set -euo pipefail
PGDATA=/var/lib/postgresql/data
if [ "$(id -u)" = 0 ]; then
  chown -R postgres:postgres "$PGDATA"
  exec gosu postgres bash "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  until pg_basebackup -h db -U replicator -D "$PGDATA" -R -X stream -c fast -w; do
    echo "waiting for db to take a base backup from"; sleep 2
  done
fi
chmod 700 "$PGDATA"
exec postgres -D "$PGDATA" -c hot_standby=on -c hot_standby_feedback=on
