"""The registry staff run (seed 000 §7, §10; seed 002 V-Pol): agents, tools, validation policies.

Changes staff make to agents (``agents``) and tools (``tools``) and V-Pol changes (``policies``).
The lowest of the concepts: it imports none of the others.
"""
