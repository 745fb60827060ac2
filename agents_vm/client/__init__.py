"""The agent's side of the Tools Broker (seed 000 §4 Tag Trinity, seed 004 the container speaks
MCP to the gateway): every way the agent reaches the control plane.

``sdk`` is the signed REST client (RABS-HMAC, ``signing``) and ``outcomes`` what it returns,
``mcp`` the same calls over the MCP face with the official client, ``turns`` the agent's writes
to the agents ledger.
"""
