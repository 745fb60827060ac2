"""The ledgers and conversations (seed 003): what arrived from outside and what the agents said.

The events ledger and the agents ledger (``ledgers``), conversations and sessions
(``conversations``), turns written as they happen or at once (``turns``, ``whole_turns``), reading
them back (``transcripts``), inbound channels (``channels``) and Type 3 platform events
(``inbound``).
"""
