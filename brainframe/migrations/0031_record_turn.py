"""``brainframe_turn_head(thread, agent, calls)`` and ``brainframe_record_turn(d jsonb)``: a whole turn written by one statement (its plan cached
per session, as the decision's is): the thread's head moved only if it is still where the
writer read it, then the turn, its messages and its events. Returns false (nothing written) when
the head moved meanwhile or a turn is open."""

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION brainframe_record_turn(d jsonb) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    moved uuid;
    thread uuid := (d->>'thread_id')::uuid;
BEGIN
    UPDATE ledger_threads
       SET head_id = (d->>'id')::uuid, turns_count = turns_count + 1, updated_at = now()
     WHERE id = thread AND agent_id = d->>'agent_id'
       AND turns_count = (d->>'expected')::integer
       AND NOT EXISTS (SELECT 1 FROM ledger_turns o WHERE o.thread_id = thread
                                                      AND o.status = 'open')
    RETURNING id INTO moved;
    IF moved IS NULL THEN
        RETURN false;
    END IF;
    INSERT INTO ledger_turns (id, thread_id, seq, parent_id, parent_hash, turn_type, status,
        agent_id, session_id, origin_id, task_id, channel_context, answer, tool_calls, summary,
        started_at, completed_at, row_hash)
    VALUES ((d->>'id')::uuid, thread, (d->>'seq')::integer, (d->>'parent_id')::uuid,
        d->>'parent_hash', 'normal', d->>'status', d->>'agent_id', (d->>'session_id')::uuid,
        (d->>'origin_id')::uuid, (d->>'task_id')::uuid, d->'channel_context', d->>'answer',
        ARRAY(SELECT jsonb_array_elements_text(d->'calls'))::uuid[], '',
        (d->>'started_at')::timestamptz, (d->>'completed_at')::timestamptz, d->>'row_hash');
    INSERT INTO ledger_messages (id, turn_id, seq, role, person_id, author, content, event_id,
        created_at, content_hash)
    SELECT r.id, r.turn_id, r.seq, r.role, r.person_id, r.author, r.content, r.event_id,
           r.created_at, r.content_hash
      FROM jsonb_to_recordset(d->'messages') AS r(id uuid, turn_id uuid, seq integer,
           role text, person_id uuid, author text, content text, event_id uuid,
           created_at timestamptz, content_hash text);
    PERFORM brainframe_append_events(d->'events');
    RETURN true;
END;
$$;
"""
# The read before it, as a function so that its plan is cached per session too (planning the
# query each time cost four times its execution).
FORWARD_HEAD = """
CREATE OR REPLACE FUNCTION brainframe_turn_head(thread uuid, agent text, calls uuid[])
RETURNS TABLE (turns_count integer, head_id uuid, head_hash text, busy boolean, mine uuid[])
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    SELECT t.turns_count::integer, t.head_id, h.row_hash::text,
           EXISTS (SELECT 1 FROM ledger_turns o WHERE o.thread_id = t.id AND o.status = 'open'),
           (SELECT coalesce(array_agg(c.id), '{}') FROM tool_calls c
             WHERE c.id = ANY(calls) AND c.agent_id = agent)
      FROM ledger_threads t LEFT JOIN ledger_turns h ON h.id = t.head_id
     WHERE t.id = thread AND t.agent_id = agent;
END;
$$;
"""
REVERSE = """
DROP FUNCTION IF EXISTS brainframe_record_turn(jsonb);
DROP FUNCTION IF EXISTS brainframe_turn_head(uuid, text, uuid[]);
"""


class Migration(migrations.Migration):
    dependencies = [("brainframe", "0030_ledgers")]

    operations = [migrations.RunSQL(FORWARD + FORWARD_HEAD, REVERSE)]
