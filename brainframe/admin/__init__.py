"""The Django admin is the tools registry and the audit reader (seed 000 §7, roadmap phase 1).

One module per part of the schema (mirroring ``brainframe.models``). Admin classes translate and
delegate: validation lives in ``brainframe.schemas`` and ``brainframe.safety.policy.conditions``,
changes that carry rules in ``brainframe.services``. Audit tables are read-only here. The
approval queue's admin is the broker's (it owns approval decisions).
"""

from . import (
    access,
    agents,
    audit,
    channels,
    council,
    events,
    ledger,
    llm,
    memory,
    registry,
    replica,
    trust,
    usage,
    webhooks,
    work,
)

__all__ = [
    "access",
    "agents",
    "audit",
    "channels",
    "council",
    "events",
    "ledger",
    "llm",
    "memory",
    "registry",
    "replica",
    "trust",
    "usage",
    "webhooks",
    "work",
]
