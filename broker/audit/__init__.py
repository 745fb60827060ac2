"""The tamper-evident audit: every decision becomes rows in reason_log, origin_registry,
reason_edges and tool_calls, written in one transaction before anything executes.

``hashing``: what is hashed and how; ``record``: writing decisions and outcomes; ``verify``:
walking a chain.

``tool_calls`` rows are hash-chained per agent. The application computes ``content_hash``,
sha256 over the canonical JSON of the row's recorded content (``CONTENT_FIELDS``); the database
function ``brainframe_record_decision`` (migration 0012) then writes every row of the decision in
one call and, under a lock on the agent's row, sets ``seq`` and ``prev_hash`` from the chain's
end and ``row_hash`` = sha256("prev_hash:seq:content_hash"). Editing, deleting or reordering any
row breaks the chain from that row on. When the execution outcome is written (once),
``outcome_hash`` = sha256(row_hash + canonical outcome) seals it too. Rows of hash scheme 1
(written before the function existed) hash ``HASHED_FIELDS`` directly and verify as before;
scheme 3 adds the face the call came in by (REST, MCP, A2A) to the hashed content.
"""
