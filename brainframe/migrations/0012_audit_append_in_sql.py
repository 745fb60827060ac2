"""The decision's audit rows in one database call (hash scheme 2).

``brainframe_record_decision(d jsonb)`` writes the origin (if new), the reason, its edges, the
hash-chained tool call and the approval request (if any) in one statement: one round trip, one
transaction when the caller has none. The agent's chain is serialised by a lock on the agent
row taken inside the function; PL/pgSQL runs each statement with a fresh snapshot, so the chain
end read after the lock is the real one. The row hash is computed there, from the previous row's
hash, the sequence number and the content hash the application computed beforehand.

Rows written before this migration keep hash scheme 1 (verified as before).
"""

from django.db import migrations, models

CREATE = r"""
CREATE OR REPLACE FUNCTION brainframe_record_decision(d jsonb)
RETURNS TABLE (out_seq bigint, out_prev_hash text, out_row_hash text)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    v_call jsonb := d -> 'call';
    v_agent text := d -> 'call' ->> 'agent_id';
    v_last_seq bigint;
    v_last_hash text;
BEGIN
    IF d ? 'origin' THEN
        INSERT INTO origin_registry
        SELECT * FROM jsonb_populate_record(NULL::origin_registry, d -> 'origin');
    END IF;
    INSERT INTO reason_log SELECT * FROM jsonb_populate_record(NULL::reason_log, d -> 'reason');
    INSERT INTO reason_edges (reason_id, entity_type, entity_id, relationship, created_at)
    SELECT e.reason_id, e.entity_type, e.entity_id, e.relationship, e.created_at
      FROM jsonb_populate_recordset(NULL::reason_edges, d -> 'edges') AS e
        ON CONFLICT DO NOTHING;

    PERFORM 1 FROM agents a WHERE a.agent_id = v_agent FOR UPDATE;
    SELECT t.seq, t.row_hash INTO v_last_seq, v_last_hash
      FROM tool_calls t WHERE t.agent_id = v_agent ORDER BY t.seq DESC LIMIT 1;
    out_seq := COALESCE(v_last_seq, 0) + 1;
    out_prev_hash := COALESCE(v_last_hash, repeat('0', 64));
    out_row_hash := encode(sha256(convert_to(
        out_prev_hash || ':' || out_seq || ':' || (d ->> 'content_hash'), 'UTF8')), 'hex');
    INSERT INTO tool_calls
    SELECT * FROM jsonb_populate_record(NULL::tool_calls, v_call || jsonb_build_object(
        'seq', out_seq, 'prev_hash', out_prev_hash, 'row_hash', out_row_hash));

    IF d ? 'approval' THEN
        INSERT INTO approval_queue
        SELECT * FROM jsonb_populate_record(NULL::approval_queue, d -> 'approval');
    END IF;
    RETURN NEXT;
END
$fn$;
"""

DROP = "DROP FUNCTION IF EXISTS brainframe_record_decision(jsonb);"


class Migration(migrations.Migration):
    dependencies = [("brainframe", "0011_context_buckets_hot_decay")]

    operations = [
        # Existing rows: scheme 1. New rows name their scheme explicitly.
        migrations.AddField(
            model_name="toolcall",
            name="hash_scheme",
            field=models.PositiveSmallIntegerField(default=1),
        ),
        migrations.AlterField(
            model_name="toolcall",
            name="hash_scheme",
            field=models.PositiveSmallIntegerField(default=2),
        ),
        migrations.RunSQL(CREATE, reverse_sql=DROP),
    ]
