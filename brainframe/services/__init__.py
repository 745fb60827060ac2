"""Governance services: business rules as plain functions with keyword-only arguments, one
subpackage per concept of the specification (docs/architecture.md has the map):

- ``registry`` — agents, tools, validation policies (seed 000 §7, §10; seed 002 V-Pol)
- ``trust`` — alignment, the nightly job, proposed rules, trajectories (seed 000 §9; seed 002)
- ``access`` — ACL, sharing, grants, standing approvals, credentials (seeds 002, 003, 004)
- ``memory`` — observations, relevance, search, context, discovery, cards (seeds 000, 001, 002)
- ``llm`` — the model gateway: admission, budgets, records, outbound filter, cache (seed 002)
- ``ledger`` — the two ledgers, conversations, turns, channels, inbound events (seed 003)
- ``eventlog`` — reading and verifying the event log, views, sinks (seed 002)
- ``work`` — tasks, delegation, deliverables, supervisors (seeds 000, 003, 004)
- ``hooks`` — hooks proposed, checked and run (seed 004)
- ``council`` — constitutional changes, voted (seed 001)

``seed`` loads the demo data and the governance baseline; it composes all of them. The order above
is the order of the layers (import-linter keeps it): a concept imports only those listed before it,
and the concepts on one line of pyproject.toml's contract never import each other.
"""
