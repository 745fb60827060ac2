"""Reggie's three modes (seed 000 §8) and the selection flow.

    Incoming query
      ├─ voice call?         → External (realtime voice via the voice platform; not this VM)
      ├─ simple lookup?      → Normal  (cheap model, read-only tools, one turn)
      └─ complex or write?   → Super   (capable model, every tool, multi-turn with a plan)

"Simple lookup" is decided without a model call, so the choice is cheap, fast and explainable:
a query is **write** if it asks for an action (book, cancel, send, change…), **complex** if it
asks for analysis (why, compare, draft, report…), has several questions or is long (over
``MAX_SIMPLE_WORDS`` words); otherwise it is a lookup. The reason is returned with the mode.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

VOICE_CHANNELS = frozenset({"voice", "phone", "phone_call", "call"})
MAX_SIMPLE_WORDS = 30
WRITE_WORDS = frozenset(
    [
        "book",
        "rebook",
        "cancel",
        "change",
        "move",
        "reschedule",
        "create",
        "add",
        "remove",
        "delete",
        "update",
        "send",
        "email",
        "text",
        "sms",
        "notify",
        "tell",
        "approve",
        "pay",
        "refund",
        "swap",
        "submit",
        "assign",
        "enrol",
        "enroll",
        "register",
        "order",
        "invoice",
        "claim",
        "arrange",
        "organise",
        "organize",
    ]
)
COMPLEX_WORDS = frozenset(
    [
        "why",
        "compare",
        "comparison",
        "analyse",
        "analyze",
        "analysis",
        "investigate",
        "draft",
        "write",
        "report",
        "trend",
        "trends",
        "plan",
        "research",
        "summarise",
        "summarize",
        "cross-reference",
        "reconcile",
        "explain",
        "forecast",
        "recommend",
    ]
)
_WORD = re.compile(r"[a-z][a-z'-]*")


@dataclass(frozen=True)
class ModeChoice:
    mode: str  # "external", "normal" or "super"
    reason: str


def select_mode(query: str, *, channel: str = "text") -> ModeChoice:
    if channel.lower() in VOICE_CHANNELS:
        return ModeChoice("external", f"{channel} channel: live voice goes to External Reggie")
    words = _WORD.findall(query.lower())
    writes = sorted(set(words) & WRITE_WORDS)
    if writes:
        return ModeChoice("super", f"asks for an action ({', '.join(writes)})")
    complex_ = sorted(set(words) & COMPLEX_WORDS)
    if complex_:
        return ModeChoice("super", f"asks for analysis ({', '.join(complex_)})")
    if query.count("?") > 1:
        return ModeChoice("super", "several questions at once")
    if len(words) > MAX_SIMPLE_WORDS:
        return ModeChoice("super", f"long query ({len(words)} words)")
    return ModeChoice("normal", "a simple lookup")
