"""The call context every stage reads, and the verdicts stages return."""

from __future__ import annotations

import copy
import dataclasses
import json
import uuid
import weakref
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from django.utils import timezone

from brainframe.models import (
    Agent,
    AgentTask,
    Delegation,
    OriginRegistry,
    ReasonLog,
    Tool,
    ValidationPolicy,
)
from brainframe.safety.guardian.core import argument_strings
from brainframe.safety.policy.acl import AclDecision
from brainframe.safety.policy.conditions import decision_facts
from brainframe.selectors import history_count
from brainframe.services.access.held import NOTHING_HELD, HeldWork


@dataclass(frozen=True)
class CallRequest:
    """A tool call as the agent sent it, after the request's shape was checked."""

    tool_id: str
    arguments: dict[str, Any]
    reason: str
    confidence: float | None = None
    task_id: uuid.UUID | None = None
    parent_r_tag: uuid.UUID | None = None
    origin: dict[str, Any] | None = None
    o_tag: uuid.UUID | None = None
    idempotency_key: str = ""
    request_hash: str = ""
    face: str = "rest"  # ToolCall.Face: how the call came in


@dataclass(frozen=True)
class Finding:
    """Something a stage noticed that does not deny by itself (a V-Pol review rule, a flag)."""

    source: str  # "vpol:<rule id>", "threat", "directive:<CODE>"
    detail: str
    #: A directive escalation declared to drop the tool to level 0 and tell senior reviewers
    #: at once (``PrimeDirective.escalation``: SAFETY_FIRST).
    safety_level_zero: bool = False
    #: Only a senior reviewer may decide the call (a V-Pol ``senior_review`` rule).
    senior: bool = False


class Outcome:
    EXECUTE = "execute"
    PENDING = "pending_approval"
    EXECUTE_POST_REVIEW = "execute_post_review"
    DENY = "deny"
    INVALID = "invalid"
    UNKNOWN_TOOL = "unknown_tool"


@dataclass(frozen=True)
class Verdict:
    outcome: str
    code: str = ""
    detail: str = ""
    errors: tuple[dict[str, str], ...] = ()
    reviewer_group: str = "reviewers"
    approval_kind: str = ""  # pre_execution / post_execution / spot_check

    @property
    def executes(self) -> bool:
        return self.outcome in (Outcome.EXECUTE, Outcome.EXECUTE_POST_REVIEW)


@dataclass(frozen=True)
class ChainTags:
    """Where a call stands in the Tag Trinity, resolved before it is decided: its O-Tag (an
    existing origin, or ``origin``, one the call registers with its decision), the chain it
    continues (None: it starts one) and the V-Pol that governs the chain, at the version the
    chain started under."""

    o_tag_id: uuid.UUID
    origin: OriginRegistry | None = None
    chain_id: uuid.UUID | None = None
    vpol_id: Any = None
    vpol_version: int | None = None

    def with_new_origin(self) -> ChainTags:
        """The same tags for another call (an origin is registered once: it gets a new id)."""
        if self.origin is None:
            return self
        origin = copy.copy(self.origin)
        origin.id = uuid.uuid4()
        return dataclasses.replace(self, origin=origin, o_tag_id=origin.id)


@dataclass
class Expectation:
    """What a decision is made under when the process did not read it for this request: the
    agent (and its key) at ``agent_generation``, the registry at ``registry_token`` (the
    snapshot ``prepare`` used). The statement that records the decision checks both and writes
    nothing unless they are current (``StaleSnapshot``); ``verified`` says it did."""

    agent_generation: str
    registry_token: str | None = None
    verified: bool = False


class StaleSnapshot(Exception):
    """The agent, its key or the registry changed since the process read what a decision was
    made under: nothing was written; read them again and decide the call anew."""


@dataclass
class CallContext:
    call_id: uuid.UUID
    agent: Agent
    request: CallRequest
    tool: Tool | None = None
    task: AgentTask | None = None
    parent: ReasonLog | None = None
    vpol: ValidationPolicy | None = None
    tags: ChainTags | None = None
    policies: list[ValidationPolicy] = field(default_factory=list)
    # (code, escalation, predicates) of active directives that have predicates.
    directives: list[tuple[str, str, list[dict[str, Any]]]] = field(default_factory=list)
    # (code, enforcement, predicates) of constitution rules that have predicates.
    constitution: list[tuple[str, str, list[dict[str, Any]]]] = field(default_factory=list)
    requester_roles: frozenset[str] = frozenset()
    # Active ACL policies' specs, highest priority first (the registry's), and the principal the
    # chain acts for (None: nobody's message started it).
    acl: list[dict[str, Any]] = field(default_factory=list)
    principal: dict[str, Any] | None = None
    # The principal's stored JSON text (the ACL cache's key); None: computed when needed.
    principal_key: str | None = None
    # The delegation the call's chain works under (its task's, or its parent call's task's).
    delegation: Delegation | None = None
    # What the agent holds (brainframe.services.access.held), read for a call whose chain names no
    # person (``principals``) or no delegated work (``delegations``): it is decided under them.
    held: HeldWork = NOTHING_HELD
    # Live grants (the registry's): a person's by person id; an agent's tool access by
    # (agent, tool). The ids of those a call used go into its audit (``grant_ids``).
    person_grants: dict[str, list[Any]] = field(default_factory=dict)
    agent_grants: dict[tuple[str, str], Any] = field(default_factory=dict)
    grant_ids: list[str] = field(default_factory=list)
    acl_decision: AclDecision | None = None  # what check_principal found, for the audit
    # A shadow-mode V-Pol rule that matched: {policy, rule, would, reason} (recorded, not acted on).
    shadow: dict[str, Any] | None = None
    local_hour: int = 0
    findings: list[Finding] = field(default_factory=list)
    threat: dict[str, Any] = field(default_factory=dict)
    verdict: Verdict | None = None
    expect: Expectation | None = None
    # What a replay decides as of (None: now): the time counts and windows are taken at.
    as_of: datetime | None = None
    _facts: dict[str, Any] | None = field(default=None, init=False, repr=False)
    _history: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    @cached_property
    def free_text(self) -> str:
        """Every string in the arguments (nested ones too), one per line."""
        return "\n".join(argument_strings(self.request.arguments))

    def facts(self) -> dict[str, Any]:
        """What V-Pol rules and directive predicates can refer to (built once per decision,
        after the context is complete; read-only for the stages)."""
        if self._facts is None:
            self._facts = self._build_facts()
        return self._facts

    def _build_facts(self) -> dict[str, Any]:
        facts = decision_facts(
            arguments=self.request.arguments,
            agent=self.agent,
            tool=self.tool,
            hour=self.local_hour,
            knock_on=self.parent is not None,
            task_id=str(self.task.task_id) if self.task else None,
            reason=self.request.reason,
            text=self.free_text,
            confidence=self.request.confidence,
        )
        # Sequence rules count on demand. Through a weak reference: the context holds its facts,
        # and a bound method here would make every decision a reference cycle that only the
        # garbage collector frees (a pause every few dozen calls).
        facts["history"] = _HistoryCount(weakref.ref(self))
        return facts

    def history_count(self, spec: dict[str, Any]) -> int:
        """A sequence rule's count (``brainframe.selectors.history_count``): the chain's or the
        agent's earlier calls, as of the call's time; each distinct spec is counted once."""
        key = json.dumps(spec, sort_keys=True)
        if key not in self._history:
            tags = self.tags
            chain = tags.o_tag_id if tags is not None and tags.origin is None else None
            self._history[key] = history_count(
                spec,
                o_tag=chain,
                agent_id=self.agent.agent_id,
                before=self.as_of or timezone.now(),
            )
        return self._history[key]


@dataclass(frozen=True, slots=True)
class _HistoryCount:
    """``CallContext.history_count`` of the context whose facts these are."""

    context: weakref.ref[CallContext]

    def __call__(self, spec: dict[str, Any]) -> int:
        ctx = self.context()
        if ctx is None:  # facts kept after their decision: nothing to count against
            raise RuntimeError("a sequence rule was evaluated after its call's context was gone")
        return ctx.history_count(spec)
