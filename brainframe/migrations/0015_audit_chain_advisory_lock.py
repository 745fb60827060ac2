"""The chain lock of ``brainframe_record_decision`` becomes a transaction-level advisory lock.

A row lock on the agent (``SELECT … FOR UPDATE``) wrote the agent row's tuple header on every
decision (a WAL record and a dirtied page) and made the agent's heartbeats and the decisions
wait on each other. ``pg_advisory_xact_lock(7426, hashtext(agent_id))`` serialises the same
appends, is released at commit or rollback like the row lock, and touches no row. Two agents
whose ids hash alike share a lock: they wait on each other, nothing more. Only this function
appends to the chain.
"""

from django.db import migrations

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

    PERFORM pg_advisory_xact_lock(7426, hashtext(v_agent));
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

PREVIOUS = r"""
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


class Migration(migrations.Migration):
    dependencies = [("brainframe", "0014_registry_generation")]

    operations = [migrations.RunSQL(CREATE, reverse_sql=PREVIOUS)]
