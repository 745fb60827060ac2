"""Plan-driven constraint selection (seed 002, "plan-driven constraint injection").

The control plane sends the agent's constraints with its context (``GET /api/v1/context/``,
``constraints``): each with its ``domain`` (``directive``, ``constitution``, ``vpol`` …), its
text, and the tools it ``governs`` (tool ids, or ``"*"`` for every tool), worked out there from
its own records (a V-Pol's tool patterns, the tool conditions in a directive's predicates).

For the plan's current step, only the constraints that govern that step's tools go in front of
the Dreamer. Each domain is selected by its own selector, as the seed's bThreads are: a
selector sees the step and the constraints of its domain and picks some; what the domains pick is
added together, and no domain can remove what another picked. A domain no selector is written
for is selected by the tools it governs (``by_tools``), so a new kind of rule in the control
plane reaches the prompt with no change here.

The plan is an optimisation of the prompt, not a boundary: the broker decides every call
against every rule whatever the prompt said (layer 1), and without a plan the Dreamer is shown
every constraint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

EVERY_TOOL = "*"


@dataclass(frozen=True)
class Constraint:
    id: str
    domain: str
    text: str
    governs: tuple[str, ...]

    @property
    def everywhere(self) -> bool:
        return EVERY_TOOL in self.governs


Selector = Callable[[tuple[str, ...], list[Constraint]], list[Constraint]]


def by_tools(step_tools: tuple[str, ...], constraints: list[Constraint]) -> list[Constraint]:
    """The constraints that govern one of the step's tools, or every tool."""
    wanted = set(step_tools)
    return [c for c in constraints if c.everywhere or wanted & set(c.governs)]


#: One selector per domain (seed 002: one bThread per constraint domain). Adding a domain is
#: adding an entry; the others are untouched.
DOMAINS: dict[str, Selector] = {
    "directive": by_tools,
    "constitution": by_tools,
    "vpol": by_tools,
}


def constraints_parse(raw: Any) -> list[Constraint]:
    """The context's ``constraints`` as ``Constraint``s (malformed entries are skipped)."""
    out = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            continue
        governs = item.get("governs")
        tools = tuple(str(t) for t in governs) if isinstance(governs, list) else (EVERY_TOOL,)
        out.append(
            Constraint(
                id=str(item.get("id", "")),
                domain=str(item.get("domain", "")),
                text=item["text"],
                governs=tools,
            )
        )
    return out


def constraints_for_step(
    constraints: Iterable[Constraint], step_tools: Iterable[str] | None
) -> list[Constraint]:
    """What the Dreamer is shown for a step using ``step_tools`` (None: no plan yet, so every
    constraint). Each domain selects on its own; the union keeps the control plane's order."""
    every = list(constraints)
    if step_tools is None:
        return every
    tools = tuple(step_tools)
    by_domain: dict[str, list[Constraint]] = {}
    for constraint in every:
        by_domain.setdefault(constraint.domain, []).append(constraint)
    chosen: set[str] = set()
    for domain, members in by_domain.items():
        selector = DOMAINS.get(domain, by_tools)
        chosen.update(c.id for c in selector(tools, members))
    return [c for c in every if c.id in chosen]


def constraints_prompt(constraints: list[Constraint]) -> str:
    if not constraints:
        return "No rule governs this step's tools beyond the broker's own checks."
    lines = ["Rules that govern what you may do now (the broker enforces them):"]
    lines += [f"- [{c.id}] {c.text}" for c in constraints]
    return "\n".join(lines)
