"""The agent's loops (seed 000 §8 modes, seed 001 Core and Planner, seed 002 Reflex loop, seed 004
self-managed handlers): what the agent does with a task.

``cognitive`` takes tasks one at a time (Ingest → Decide → Execute → Review → Learn) in the mode
``modes`` selects, through the steps of ``phases``; ``core`` routes each request; ``reflex`` is
Context → Dream → Fire → Gate; ``handlers`` are the hot-swappable answer, result and loop code.
"""
