"""A call's outcome written by one function call whose plan each connection keeps (the statement
built per call was parsed and planned each time), and the append-only trigger's allowed update
checked with one comparison of the rows without their mutable columns (it compared them column
by column, which cost more than the update itself)."""

from django.db import migrations

from brainframe.models.append_only import REFUSE_AUDIT_REWRITE_FUNCTION

PREVIOUS_REFUSE = """
CREATE OR REPLACE FUNCTION brainframe_refuse_audit_rewrite() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    changed text[];
BEGIN
    IF TG_OP <> 'UPDATE' THEN
        RAISE EXCEPTION 'append_only: % on % is not allowed', TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'insufficient_privilege';
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

# d: the outcome's values as JSON (a JSON null is the column's NULL, as the ORM writes a
# JSONField's None) and its events. Written only while the call's outcome is still pending;
# the events are appended only if it was written.
RECORD_OUTCOME = """
CREATE OR REPLACE FUNCTION brainframe_record_outcome(call uuid, d jsonb)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    UPDATE tool_calls SET
        outcome = d ->> 'outcome',
        output = NULLIF(d -> 'output', 'null'::jsonb),
        error = d ->> 'error',
        duration_ms = (d ->> 'duration_ms')::integer,
        executed_at = (d ->> 'executed_at')::timestamptz,
        executed_arguments = NULLIF(d -> 'executed_arguments', 'null'::jsonb),
        outbound_findings = d -> 'outbound_findings',
        outcome_hash = d ->> 'outcome_hash'
     WHERE id = call AND outcome = 'pending';
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM brainframe_append_events(d -> 'events');
    RETURN true;
END;
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("brainframe", "0046_tool_calls_hot_outcome")]

    operations = [
        migrations.RunSQL(
            REFUSE_AUDIT_REWRITE_FUNCTION + RECORD_OUTCOME,
            reverse_sql=PREVIOUS_REFUSE
            + "DROP FUNCTION IF EXISTS brainframe_record_outcome(uuid, jsonb);",
        ),
    ]
