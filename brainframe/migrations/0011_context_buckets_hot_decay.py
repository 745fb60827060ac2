"""The nightly decay as heap-only updates: no index on the score it rewrites, and pages left half
empty so each row's new version fits beside the old one (no index entries to add)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("brainframe", "0010_llm_usage_prices")]

    operations = [
        migrations.RemoveIndex(model_name="contextbucketentry", name="context_buckets_score_idx"),
        migrations.RunSQL(
            "ALTER TABLE context_buckets SET (fillfactor = 50)",
            reverse_sql="ALTER TABLE context_buckets RESET (fillfactor)",
        ),
    ]
