"""Super Reggie's read replica (seed 000 §8): the read-only role and what it may read.

The replica is a PostgreSQL streaming standby of the primary (``rabs/stack/replica.py`` starts one
of the embedded server; a deployment names its own in ``RABS_REPLICA_URL``). Roles and grants are
written on the primary and replayed by the standby like everything else, so they are made here:

- the role ``RABS_REPLICA_ROLE`` (``rabs_replica_reader``): may log in, inherits nothing, and
  its sessions start read-only;
- it may read the ``replica`` schema's views that staff exposed (``ReplicaView``, admin) and
  nothing else: no table of the schema is granted to it (the views run with their owner's
  rights, and show no secrets, keys, arguments or message texts).

``replica_grants_sync`` makes the grants exactly the exposed views; it runs when staff change
the choice, and at start (``manage.py replica_setup``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection, transaction
from psycopg import sql

from brainframe.models import ReplicaView

SCHEMA = "replica"


class ReplicaSetupError(Exception):
    """The role could not be created or granted (the database user lacks the right)."""


def _execute(cursor: Any, statement: sql.Composable) -> None:
    cursor.execute(statement.as_string(cursor.connection))


def replica_views() -> dict[str, str]:
    """The views the replica schema has, with their descriptions (from the catalogue)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, COALESCE(obj_description(c.oid, 'pg_class'), '') "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind = 'v' ORDER BY c.relname",
            [SCHEMA],
        )
        return dict(cursor.fetchall())


def replica_views_register() -> int:
    """A row for each view of the replica schema that has none yet (exposed: the views are
    curated in the migrations); returns how many were added. Staff's choices are kept."""
    added = 0
    for name, description in replica_views().items():
        added += ReplicaView.objects.get_or_create(
            name=name, defaults={"description": description}
        )[1]
    return added


@transaction.atomic
def replica_grants_sync(*, password: str | None = None) -> dict[str, Any]:
    """The reader role exists, starts read-only, and may read exactly the exposed views.
    Returns the role and the views it may read; ReplicaSetupError when the database user may
    not create or grant roles."""
    role = sql.Identifier(settings.RABS_REPLICA_ROLE)
    replica_views_register()
    existing = set(replica_views())
    exposed = [
        v
        for v in ReplicaView.objects.filter(exposed=True).values_list("name", flat=True)
        if v in existing
    ]
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM pg_roles WHERE rolname = %s", [settings.RABS_REPLICA_ROLE]
            )
            if cursor.fetchone() is None:
                _execute(cursor, sql.SQL("CREATE ROLE {} LOGIN NOINHERIT").format(role))
            if password is not None:
                _execute(
                    cursor,
                    sql.SQL("ALTER ROLE {} PASSWORD {}").format(role, sql.Literal(password)),
                )
            _execute(
                cursor,
                sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(role),
            )
            _execute(
                cursor,
                sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
                    sql.Identifier(connection.settings_dict["NAME"]), role
                ),
            )
            _execute(
                cursor,
                sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM {}").format(
                    sql.Identifier(SCHEMA), role
                ),
            )
            _execute(
                cursor,
                sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(SCHEMA), role),
            )
            for view in exposed:
                _execute(
                    cursor,
                    sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(SCHEMA, view), role),
                )
    except Exception as exc:  # psycopg's InsufficientPrivilege and kin: say what to do
        raise ReplicaSetupError(
            f"cannot set up the replica role {settings.RABS_REPLICA_ROLE}: {exc}; run "
            "`manage.py replica_setup` as a database user that may create roles"
        ) from exc
    return {"role": settings.RABS_REPLICA_ROLE, "views": exposed}
