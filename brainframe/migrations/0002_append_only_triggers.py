"""Database half of the append-only rule for the audit tables (see brainframe.models.append_only)."""

from __future__ import annotations

from django.db import migrations

from brainframe.models.append_only import REFUSE_AUDIT_REWRITE_FUNCTION, append_only_trigger_sql

# Columns that may be filled in after insert; everything else is frozen by the trigger.
AUDIT_TABLES = {
    "origin_registry": ("bucket", "bucket_confidence"),
    "reason_log": ("alignment", "vector", "embedding_model"),
    "tool_calls": (
        "output",
        "outcome",
        "error",
        "duration_ms",
        "executed_at",
        "executed_arguments",
        "alignment_rating",
        "alignment_reasons",
    ),
}


def _operations() -> list[migrations.RunSQL]:
    operations = [
        migrations.RunSQL(
            REFUSE_AUDIT_REWRITE_FUNCTION,
            "DROP FUNCTION IF EXISTS brainframe_refuse_audit_rewrite();",
        )
    ]
    for table, mutable in AUDIT_TABLES.items():
        forward, reverse = append_only_trigger_sql(table, mutable)
        operations.append(migrations.RunSQL(forward, reverse))
    return operations


class Migration(migrations.Migration):
    dependencies = [("brainframe", "0001_initial")]

    operations = _operations()
