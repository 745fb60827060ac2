"""A call's outcome as a heap-only update: the outcome columns carry no index, and each page of
the audit keeps a quarter free so the row's new version (with its output) fits beside the old one;
otherwise every executed call's outcome wrote a new entry into each of the table's six indexes."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("brainframe", "0045_webhook_deliveries_name")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE tool_calls SET (fillfactor = 75)",
            reverse_sql="ALTER TABLE tool_calls RESET (fillfactor)",
        ),
    ]
