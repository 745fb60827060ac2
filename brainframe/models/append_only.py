"""Append-only tables: the audit trail can grow, never be rewritten.

Two layers. In the application, these models refuse ``save()`` of an existing row, ``delete()``,
and queryset ``update()``/``delete()``, except for the few columns each table declares as filled
in later (``APPEND_ONLY_MUTABLE``: an embedding computed off the request path, an execution
outcome written once, an alignment rating). In the database, a trigger installed by the
migration refuses DELETE and any UPDATE that changes another column, so raw SQL
through the application's connection cannot rewrite history either. (TRUNCATE is a table
owner's privilege, which the application's database role should not hold in production; the test
suite needs it to reset tables between transactional tests.)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from django.db import models


class AppendOnlyError(Exception):
    """Raised when code tries to change or remove an audit row."""


class AppendOnlyQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> int:
        forbidden = set(kwargs) - set(self.model.APPEND_ONLY_MUTABLE)
        if forbidden:
            raise AppendOnlyError(
                f"{self.model._meta.db_table} is append-only: cannot update {sorted(forbidden)}"
            )
        return super().update(**kwargs)

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError(f"{self.model._meta.db_table} is append-only: rows cannot be deleted")

    # bulk_update goes through update(); keep the message pointing at the real rule.
    def bulk_update(
        self, objs: Iterable[models.Model], fields: Iterable[str], batch_size: int | None = None
    ) -> int:
        forbidden = set(fields) - set(self.model.APPEND_ONLY_MUTABLE)
        if forbidden:
            raise AppendOnlyError(
                f"{self.model._meta.db_table} is append-only: cannot update {sorted(forbidden)}"
            )
        return super().bulk_update(objs, fields, batch_size=batch_size)


class AppendOnlyModel(models.Model):
    """Base for audit tables. Subclasses list the columns that may be filled in after insert."""

    APPEND_ONLY_MUTABLE: ClassVar[tuple[str, ...]] = ()

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            update_fields = kwargs.get("update_fields")
            if not update_fields or set(update_fields) - set(self.APPEND_ONLY_MUTABLE):
                raise AppendOnlyError(
                    f"{self._meta.db_table} is append-only: an existing row cannot be saved "
                    f"(only {list(self.APPEND_ONLY_MUTABLE)} may be filled in, via update_fields)"
                )
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError(f"{self._meta.db_table} is append-only: rows cannot be deleted")


def append_only_trigger_sql(table: str, mutable_columns: Iterable[str]) -> tuple[str, str]:
    """SQL (forward, reverse) installing the database half of the append-only rule on ``table``."""
    mutable = ", ".join(f"'{column}'" for column in mutable_columns) or "''"
    forward = f"""
        CREATE TRIGGER {table}_append_only_update
            BEFORE UPDATE ON {table} FOR EACH ROW
            EXECUTE FUNCTION brainframe_refuse_audit_rewrite({mutable});
        CREATE TRIGGER {table}_append_only_delete
            BEFORE DELETE ON {table} FOR EACH ROW
            EXECUTE FUNCTION brainframe_refuse_audit_rewrite();
    """
    reverse = f"""
        DROP TRIGGER IF EXISTS {table}_append_only_update ON {table};
        DROP TRIGGER IF EXISTS {table}_append_only_delete ON {table};
    """
    return forward, reverse


#: The trigger function: UPDATE may only change the columns passed as trigger arguments. The
#: rows without those columns are compared whole first (an allowed update, every executed call's
#: outcome, costs one comparison); only a refused update lists the columns it changed.
REFUSE_AUDIT_REWRITE_FUNCTION = """
CREATE OR REPLACE FUNCTION brainframe_refuse_audit_rewrite() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    changed text[];
BEGIN
    IF TG_OP <> 'UPDATE' THEN
        RAISE EXCEPTION 'append_only: % on % is not allowed', TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF (to_jsonb(NEW) - TG_ARGV) = (to_jsonb(OLD) - TG_ARGV) THEN
        RETURN NEW;
    END IF;
    SELECT array_agg(n.key) INTO changed
      FROM jsonb_each(to_jsonb(NEW)) AS n
      JOIN jsonb_each(to_jsonb(OLD)) AS o USING (key)
     WHERE n.value IS DISTINCT FROM o.value
       AND NOT (n.key = ANY (TG_ARGV));
    IF changed IS NOT NULL THEN
        RAISE EXCEPTION 'append_only: columns % of % cannot be changed', changed, TG_TABLE_NAME
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END;
$$;
"""
