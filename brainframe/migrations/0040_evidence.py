"""Evidence that survives an insider, and upstreams that cannot change silently.

- ``audit_checkpoints``: signed statements of the chains' heads, append-only (the trigger of
  migration 0002 refuses UPDATE and DELETE).
- ``mcp_upstreams``: a trust level, and what the upstream lists now (each tool's definition
  hash), against which every call of an imported tool is checked.
- ``ledger_turns``: an index on ``completed_at`` (the threads sealed since the last checkpoint).
"""

from django.db import migrations, models

from brainframe.models.append_only import append_only_trigger_sql

_CHECKPOINTS_FORWARD, _CHECKPOINTS_REVERSE = append_only_trigger_sql("audit_checkpoints", ())


class Migration(migrations.Migration):
    dependencies = [
        ("brainframe", "0039_authority"),
    ]

    operations = [
        migrations.CreateModel(
            name="AuditCheckpoint",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("seq", models.BigIntegerField(unique=True)),
                ("at", models.DateTimeField()),
                ("key_id", models.CharField(max_length=16)),
                ("reason", models.CharField(help_text="beat, shutdown or manual", max_length=16)),
                ("body", models.TextField()),
                ("signature", models.CharField(max_length=100)),
            ],
            options={
                "verbose_name": "audit checkpoint",
                "db_table": "audit_checkpoints",
                "ordering": ["-seq"],
            },
        ),
        migrations.AddField(
            model_name="historicalmcpupstream",
            name="trust",
            field=models.CharField(
                choices=[
                    ("trusted", "Trusted (its annotations are taken as staff's proposal)"),
                    ("untrusted", "Untrusted (its annotations never skip review)"),
                ],
                default="untrusted",
                help_text="From an untrusted upstream, readOnlyHint does not by itself let a tool run without review.",
                max_length=10,
            ),
        ),
        migrations.AddField(
            model_name="mcpupstream",
            name="listed",
            field=models.JSONField(
                blank=True,
                default=dict,
                editable=False,
                help_text="What it lists now: each tool's name → the sha256 of its definition.",
            ),
        ),
        migrations.AddField(
            model_name="mcpupstream",
            name="listed_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name="mcpupstream",
            name="trust",
            field=models.CharField(
                choices=[
                    ("trusted", "Trusted (its annotations are taken as staff's proposal)"),
                    ("untrusted", "Untrusted (its annotations never skip review)"),
                ],
                default="untrusted",
                help_text="From an untrusted upstream, readOnlyHint does not by itself let a tool run without review.",
                max_length=10,
            ),
        ),
        migrations.AddIndex(
            model_name="turn",
            index=models.Index(fields=["completed_at"], name="ledger_turns_completed_idx"),
        ),
        migrations.AddIndex(
            model_name="auditcheckpoint",
            index=models.Index(fields=["at"], name="audit_checkpoints_at"),
        ),
        migrations.RunSQL(_CHECKPOINTS_FORWARD, _CHECKPOINTS_REVERSE),
    ]
