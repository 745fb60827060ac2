"""Where a call stands, from the broker's own records (docs/access.md, "Authority is derived"):
``prepare`` loads everything the stages read — the tool, the registry's rules, and the call's
chain: its task, parent call, O-Tag, principal and delegation, and the work the agent holds when
the chain names no person or no delegated work. What the agent sent may only agree with those
records; a chain that does not hold is refused and kept in the event log.
"""

from __future__ import annotations

import json
import logging
import uuid
from functools import lru_cache
from typing import Any

from django.db import DatabaseError, transaction
from django.db.models import F, OuterRef, Subquery, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from brainframe.events import ChainRefused, emit
from brainframe.models import Agent, AgentTask, Delegation, OriginRegistry, ReasonLog, ToolCall
from brainframe.services.access.held import held_work
from brainframe.services.work.delegation import delegation_of_task

from ..audit.rows import origin_new
from ..errors import BrokerRefusal
from ..pipeline.context import CallContext, CallRequest, ChainTags, Expectation, StaleSnapshot
from ..registry import registry_remembered, registry_snapshot

log = logging.getLogger(__name__)


def prepare(
    *,
    agent: Agent,
    request: CallRequest,
    registry_token: str | None = None,
    expect: Expectation | None = None,
) -> CallContext:
    """Load everything the stages read. Raises BrokerRefusal for references that do not resolve.

    ``expect``: the agent was not read for this request; decide under the process's registry
    snapshot as it is, and have the decision's statement check both (``Expectation``)."""
    ctx = CallContext(call_id=uuid.uuid4(), agent=agent, request=request)
    if expect is not None:
        registry = registry_remembered()
        if registry is None:  # nothing in memory to decide under
            raise StaleSnapshot("no registry snapshot in this process yet")
        expect.registry_token = registry.token
        ctx.expect = expect
    else:
        registry = registry_snapshot(registry_token)
    ctx.tool = registry.tool(request.tool_id)
    try:
        cited = _bind_chain(ctx, agent, request)
    except BrokerRefusal as refusal:
        _chain_refused(agent, request, refusal)
        raise
    if ctx.parent is not None:
        ctx.vpol = ctx.parent.vpol
    elif ctx.tool is not None:
        ctx.vpol = registry.governing_policy(ctx.tool)
    ctx.directives = registry.directives
    ctx.constitution = registry.constitution
    ctx.acl = registry.acl
    ctx.person_grants, ctx.agent_grants = registry.person_grants, registry.agent_grants
    ctx.local_hour = timezone.localtime().hour
    ctx.tags = _chain_tags(ctx)
    # Who the chain acts for (docs/access.md): the sender of the message that started it, as
    # the system recorded it (an origin the agent registers itself never carries one).
    text = None
    if ctx.parent is not None:
        text = getattr(ctx.parent, "chain_principal", None)
    elif cited is not None:
        text = cited[1]
    elif ctx.task is not None:
        text = getattr(ctx.task, "chain_principal", None)
    if text is not None:
        ctx.principal, ctx.principal_key = principal_parsed(text), text
    if ctx.task is not None and getattr(ctx.task, "delegation_id", None) is not None:
        ctx.delegation = delegation_of_task(ctx.task.pk)
    # A chain that names no person, or no delegated work, is decided under what the agent
    # holds (docs/access.md, "Authority is derived"): one indexed query, only when the agent's
    # row (checked by the decision's statement when it came from memory) counts any.
    if (
        ctx.tool is not None
        and agent.held_tasks
        and (ctx.principal is None or ctx.delegation is None)
    ):
        ctx.held = held_work(agent)
    return ctx


def _chain_refused(agent: Agent, request: CallRequest, refusal: BrokerRefusal) -> None:
    """A chain the agent named that did not hold is kept in the event log (it may be an attempt
    to act under someone else's authority); the refusal stands even if that write fails."""
    try:
        with transaction.atomic():
            emit(
                ChainRefused(
                    agent_id=agent.agent_id,
                    tool_id=request.tool_id,
                    code=refusal.code,
                    field=refusal.field or "",
                    detail=refusal.detail,
                    face=request.face,
                    task_id=str(request.task_id) if request.task_id else None,
                    parent_r_tag=str(request.parent_r_tag) if request.parent_r_tag else None,
                    o_tag=str(request.o_tag) if request.o_tag else None,
                )
            )
    except DatabaseError:
        log.exception("could not keep a refused chain in the event log")


def _conflict(field: str, detail: str) -> BrokerRefusal:
    return BrokerRefusal(409, "chain_conflict", detail, field=field)


def _bind_chain(
    ctx: CallContext, agent: Agent, request: CallRequest
) -> tuple[Any, str | None] | None:
    """The call's place in a chain, from the broker's records (docs/access.md, "Authority is
    derived"): a knock-on call inherits its parent's task (and through it the principal and the
    delegation); a call naming a task inherits the task's origin. What the agent also sends may
    only agree: an origin or O-Tag that would replace the chain is refused (``chain_conflict``).
    Returns the cited O-Tag (id, principal text) when the chain is one the call names by O-Tag."""
    task_id = request.task_id
    if request.o_tag is not None and (
        request.origin is not None or request.parent_r_tag is not None
    ):
        raise BrokerRefusal(
            400, "conflicting_origin", "give one of origin, o_tag and parent_r_tag", field="o_tag"
        )
    if request.parent_r_tag is not None:
        if request.origin is not None:
            raise BrokerRefusal(
                400,
                "chain_is_inherited",
                "a knock-on call inherits its origin and policy from parent_r_tag; omit origin",
                field="origin",
            )
        ctx.parent = (
            ReasonLog.objects.select_related("vpol")
            .annotate(chain_principal=_PRINCIPAL_TEXT, chain_task=_PARENT_TASK)
            .filter(pk=request.parent_r_tag, agent=agent)
            .first()
        )
        if ctx.parent is None:
            raise BrokerRefusal(
                404, "unknown_parent_r_tag", "no such R-Tag of yours", field="parent_r_tag"
            )
        inherited = getattr(ctx.parent, "chain_task", None)
        if task_id is not None and task_id != inherited:
            raise _conflict(
                "task_id",
                "a knock-on call belongs to its parent call's task"
                + (f" ({inherited})" if inherited else " (none)")
                + "; omit task_id or name that one",
            )
        task_id = inherited
    if task_id is not None:
        ctx.task = (
            AgentTask.objects.select_related("on_behalf_of")
            .annotate(chain_principal=_PRINCIPAL_TEXT, delegation_id=_DELEGATION)
            .filter(pk=task_id, agent=agent)
            .first()
        )
        if ctx.task is None:
            raise BrokerRefusal(404, "unknown_task", "no such task in your inbox", field="task_id")
        requester = ctx.task.on_behalf_of
        if requester is not None:
            ctx.requester_roles = frozenset(requester.groups.values_list("name", flat=True))
        chain = ctx.task.o_tag_id
        if chain is not None and request.origin is not None:
            raise _conflict(
                "origin",
                f"task {ctx.task.task_id} belongs to the chain of O-Tag {chain}: a call for it "
                "inherits that origin; omit origin",
            )
        if chain is not None and request.o_tag is not None and request.o_tag != chain:
            raise _conflict(
                "o_tag", f"task {ctx.task.task_id} belongs to the chain of O-Tag {chain}, not "
                f"{request.o_tag}",
            )  # fmt: skip
    if request.o_tag is None or (ctx.task is not None and ctx.task.o_tag_id == request.o_tag):
        return None
    cited: tuple[Any, str | None] | None = (
        OriginRegistry.objects.filter(pk=request.o_tag, registered_by=agent)
        .annotate(principal_text=Cast("principal", TextField()))
        .values_list("pk", "principal_text")
        .first()
    )
    if cited is None:
        raise BrokerRefusal(404, "unknown_origin", "no such O-Tag registered by you", field="o_tag")
    return cited


#: The chain's principal as its stored JSON text: the text is the key of the ACL's cache.
_PRINCIPAL_TEXT = Cast(F("o_tag__principal"), TextField())
#: A parent call's task: a knock-on call inherits it.
_PARENT_TASK = Subquery(ToolCall.objects.filter(r_tag=OuterRef("pk")).values("task_id")[:1])
#: The delegation that made a task (None: the task is not delegated work).
_DELEGATION = Subquery(Delegation.objects.filter(task=OuterRef("pk")).values("pk")[:1])


@lru_cache(maxsize=4096)
def principal_parsed(text: str) -> dict[str, Any]:
    """A principal's JSON, parsed once per distinct text (read-only for every reader)."""
    return dict(json.loads(text))


def _chain_tags(ctx: CallContext) -> ChainTags:
    """The Tag Trinity of the call: a knock-on call inherits its parent's O-Tag, chain and V-Pol
    (at the chain's version); a new chain takes the origin it names (registering it), the O-Tag
    it cites, or its task's, else registers the agent's own initiative as its origin."""
    if ctx.parent is not None:
        return ChainTags(
            o_tag_id=ctx.parent.o_tag_id,
            chain_id=ctx.parent.chain_id,
            vpol_id=ctx.parent.vpol_id,
            vpol_version=ctx.parent.vpol_version,
        )
    req, origin = ctx.request, None
    if req.origin is not None:
        origin = origin_new(
            agent=ctx.agent,
            origin_type=req.origin["origin_type"],
            source_ref=req.origin["source_ref"],
            metadata=req.origin.get("metadata") or {},
        )
    elif req.o_tag is not None:
        o_tag_id = req.o_tag
    elif ctx.task is not None and ctx.task.o_tag_id is not None:
        o_tag_id = ctx.task.o_tag_id
    else:
        origin = origin_new(
            agent=ctx.agent,
            origin_type=OriginRegistry.OriginType.AGENT,
            source_ref=f"agent:{ctx.agent.agent_id}"
            + (f":task:{ctx.task.task_id}" if ctx.task else ""),
            metadata={"note": "no origin given: the agent's own initiative"},
        )
    if origin is not None:
        o_tag_id = origin.id
    return ChainTags(
        o_tag_id=o_tag_id,
        origin=origin,
        vpol_id=ctx.vpol.id if ctx.vpol else None,
        vpol_version=ctx.vpol.version if ctx.vpol else None,
    )
