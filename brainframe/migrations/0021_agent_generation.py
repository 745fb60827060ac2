"""A generation token per agent, and the decision's statement checks what it was decided under.

``agents.generation`` gets a new random value in the same transaction as any change to the
agent that a decision reads (everything but its heartbeat columns and ``updated_at``) and as any
change to its signing keys (issue, rotate, revoke, delete). A web process may then keep an
agent and its key in memory and decide a signed call without reading them: the statement that
records the decision (``brainframe_record_decision``) is given the agent's generation and the
registry's token the process decided under (``d -> 'expect'``), and refuses to write anything
(SQLSTATE ``RB001``) unless both are still current, so the process reads them again and decides
the call anew. A paused agent or a revoked key is therefore refused from the first call that
commits after the change, in every process, exactly as when the agent was read on every call.

Like the registry's token (migration 0014) it lives outside the ORM's models: only triggers
write it, only the broker's hot path reads it.
"""

from importlib import import_module

from django.db import migrations

PREVIOUS = import_module("brainframe.migrations.0015_audit_chain_advisory_lock").CREATE
BEGIN = "BEGIN\n    IF d ? 'origin' THEN"
assert BEGIN in PREVIOUS
CHECK = """BEGIN
    -- What the decision was made under (an agent and a registry kept in the process's memory)
    -- must still be current, or nothing is written.
    IF d ? 'expect' AND (
        NOT EXISTS (
            SELECT 1 FROM agents a
             WHERE a.agent_id = v_agent AND a.generation = (d #>> '{expect,agent}')::uuid)
        OR (SELECT g.token::text FROM registry_generation g WHERE g.id = 1)
           IS DISTINCT FROM (d #>> '{expect,registry}')
    ) THEN
        RAISE EXCEPTION 'stale snapshot: the agent, its key or the registry changed'
            USING ERRCODE = 'RB001';
    END IF;
    IF d ? 'origin' THEN"""
CREATE = PREVIOUS.replace(BEGIN, CHECK)

# Columns a decision does not read: a heartbeat does not make a new generation.
UNREAD = "'{last_heartbeat_at,uptime_seconds,updated_at,generation}'::text[]"

FORWARD = f"""
ALTER TABLE agents ADD COLUMN generation uuid NOT NULL DEFAULT gen_random_uuid();

CREATE FUNCTION brainframe_agent_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.generation IS NOT DISTINCT FROM OLD.generation
       AND (to_jsonb(NEW) - {UNREAD}) IS DISTINCT FROM (to_jsonb(OLD) - {UNREAD}) THEN
        NEW.generation := gen_random_uuid();
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER agents_generation
    BEFORE UPDATE ON agents FOR EACH ROW EXECUTE FUNCTION brainframe_agent_changed();

CREATE FUNCTION brainframe_agent_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agents SET generation = gen_random_uuid()
     WHERE agent_id = CASE WHEN TG_OP = 'DELETE' THEN OLD.agent_id ELSE NEW.agent_id END;
    RETURN NULL;
END
$$;
CREATE TRIGGER agent_credentials_generation
    AFTER INSERT OR UPDATE OR DELETE ON agent_credentials
    FOR EACH ROW EXECUTE FUNCTION brainframe_agent_key_changed();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS agent_credentials_generation ON agent_credentials;
DROP FUNCTION IF EXISTS brainframe_agent_key_changed();
DROP TRIGGER IF EXISTS agents_generation ON agents;
DROP FUNCTION IF EXISTS brainframe_agent_changed();
ALTER TABLE agents DROP COLUMN IF EXISTS generation;
"""


class Migration(migrations.Migration):
    dependencies = [("brainframe", "0020_origin_a2a")]

    operations = [
        migrations.RunSQL(FORWARD, BACKWARD),
        migrations.RunSQL(CREATE, reverse_sql=PREVIOUS),
    ]
