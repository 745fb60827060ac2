"""The chain lock of ``brainframe_record_decision`` becomes a transaction-level advisory lock.

A row lock on the agent (``SELECT … FOR UPDATE``) wrote the agent row's tuple header on every
decision (a WAL record and a dirtied page) and made the agent's heartbeats and the decisions
wait on each other. ``pg_advisory_xact_lock(7426, hashtext(agent_id))`` serialises the same
appends, is released at commit or rollback like the row lock, and touches no row. Two agents
whose ids hash alike share a lock: they wait on each other, nothing more. Only this function
appends to the chain.
"""

from importlib import import_module

from django.db import migrations

# The function as migration 0012 created it, with only its lock statement changed.
PREVIOUS = import_module("brainframe.migrations.0012_audit_append_in_sql").CREATE
ROW_LOCK = "    PERFORM 1 FROM agents a WHERE a.agent_id = v_agent FOR UPDATE;\n"
assert ROW_LOCK in PREVIOUS
CREATE = PREVIOUS.replace(
    ROW_LOCK, "    PERFORM pg_advisory_xact_lock(7426, hashtext(v_agent));\n"
)


class Migration(migrations.Migration):
    dependencies = [("brainframe", "0014_registry_generation")]

    operations = [migrations.RunSQL(CREATE, reverse_sql=PREVIOUS)]
