"""Bearer tokens and MCP upstreams join the generations a web process may remember things under.

- ``agent_tokens``: revoking, re-dating or deleting a token gives its agent a new generation
  (``agents.generation``, migration 0021) in the same transaction, as a change of its signing
  keys does. The MCP face may then keep a token it admitted in memory and decide a tool call
  without reading it: the statement that records the decision checks the agent's generation, so
  a revoked token is refused from the first call that commits after the revocation, in every
  process. Marking a token used (``last_used_at``) is not a change; a new token changes nothing
  that was remembered.
- ``mcp_upstreams``: part of the registry the broker caches (``broker.registry``): a change
  renews the registry's generation token (migration 0014), so the upstream a tool forwards to
  can be kept with the tool.
"""

from django.db import migrations

FORWARD = """
CREATE FUNCTION brainframe_agent_token_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        UPDATE agents SET generation = gen_random_uuid();
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE agents SET generation = gen_random_uuid() WHERE agent_id = OLD.agent_id;
    ELSIF (to_jsonb(NEW) - 'last_used_at') IS DISTINCT FROM (to_jsonb(OLD) - 'last_used_at') THEN
        UPDATE agents SET generation = gen_random_uuid()
         WHERE agent_id IN (OLD.agent_id, NEW.agent_id);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER agent_tokens_generation
    AFTER UPDATE OR DELETE ON agent_tokens
    FOR EACH ROW EXECUTE FUNCTION brainframe_agent_token_changed();
CREATE TRIGGER agent_tokens_truncated_generation
    AFTER TRUNCATE ON agent_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION brainframe_agent_token_changed();

CREATE TRIGGER mcp_upstreams_registry_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON mcp_upstreams
    FOR EACH STATEMENT EXECUTE FUNCTION brainframe_registry_changed();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS mcp_upstreams_registry_changed ON mcp_upstreams;
DROP TRIGGER IF EXISTS agent_tokens_truncated_generation ON agent_tokens;
DROP TRIGGER IF EXISTS agent_tokens_generation ON agent_tokens;
DROP FUNCTION IF EXISTS brainframe_agent_token_changed();
"""


class Migration(migrations.Migration):
    dependencies = [("brainframe", "0037_capability_request_person")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
