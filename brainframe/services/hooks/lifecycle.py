"""Hooks: propose, review, enable and disable them; evaluate them on the event log and the
minute timer; fire their effects.

Life: an agent proposes a hook (``hook_propose``, the ``loop.enable_hook`` of seeds 003/004:
a code-free definition); staff approve or reject it (``hook_review``) unless policy lets it go
live at once (``RABS_HOOKS_AUTO_APPROVE``: by default a deterministic or scheduled hook whose
effects only wake the agent or queue a message for it); staff or the owning agent enable and
disable it (``hook_set_enabled``). A hook whose evaluation or effect fails
``RABS_HOOK_MAX_ERRORS`` times in a row is disabled with a notice (``hook:disabled``).

Evaluation is off every request's path. ``hooks_run`` (the beat's ``run_hooks`` job, every 15 s)
reads the event log after its cursor, like a SIEM sink (nothing skipped, each stream in order,
the cursor saved with what the run did: a crash re-reads, never loses); ``hooks_tick`` (the
60-second timer, ``hook_timer``) fires the scheduled hooks whose cron time has come.

What a hook sees: its own agent's events, the system's, and every inbound event (with the
origin's text as ``origin.text``). What it does: never more than its agent may. ``wake`` puts a
task in the agent's inbox, ``message`` queues text for the agent's next turn (handed over by the
context endpoint), ``invoke`` submits a tool call as the agent through the broker (every stage,
the audit; the O-Tag names the hook). Every verdict and effect is in the event log.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from brainframe.events import (
    HookDisabled,
    HookEnabled,
    HookEvent,
    HookProposed,
    HookReviewed,
    emit,
)
from brainframe.models import (
    Agent,
    Hook,
    HookMessage,
)
from brainframe.services.hooks.checks import (
    DEFINITION_FIELDS,
    HookError,
    auto_approved,
    hook_definition_check,
)


def hook_event(cls: type[HookEvent], hook: Hook, **extra: Any) -> HookEvent:
    return cls(
        hook_id=str(hook.pk),
        agent_id=hook.agent_id,
        hook_name=hook.name,
        kind=hook.kind,
        **extra,
    )


def hook_propose(*, agent: Agent, definition: dict[str, Any], proposed_by: str) -> Hook:
    """A new hook for ``agent`` (``proposed_by``: ``agent:<id>`` or a staff username): active at
    once when policy allows it, else waiting for staff."""
    d = hook_definition_check(agent, definition)
    if Hook.objects.filter(agent=agent, name=d["name"]).exists():
        raise HookError("duplicate_name", "you have a hook of that name", field="name", status=409)
    live = auto_approved(d)
    with transaction.atomic():
        hook = Hook.objects.create(
            agent=agent,
            proposed_by=proposed_by[:150],
            status=Hook.Status.ACTIVE if live else Hook.Status.PROPOSED,
            review_reason="allowed by policy (RABS_HOOKS_AUTO_APPROVE)" if live else "",
            schedule_checked_at=timezone.now(),
            **{k: d[k] for k in DEFINITION_FIELDS},
        )
        emit(
            hook_event(HookProposed, hook, detail="active at once (policy)" if live else "waiting")
        )
    return hook


def hook_review(*, hook: Hook, reviewer: Any, approve: bool, reason: str = "") -> Hook:
    """Staff decide a proposed hook."""
    with transaction.atomic():
        hook = Hook.objects.select_for_update().get(pk=hook.pk)
        if hook.status != Hook.Status.PROPOSED:
            raise HookError("not_proposed", f"this hook is {hook.status}", status=409)
        if not approve and not reason.strip():
            raise HookError("reason_required", "say why it is rejected", field="reason")
        hook.status = Hook.Status.ACTIVE if approve else Hook.Status.REJECTED
        hook.reviewed_by, hook.reviewed_at = reviewer, timezone.now()
        hook.review_reason = reason
        hook.schedule_checked_at = timezone.now()
        hook.save()
        verdict = "approved" if approve else "rejected"
        emit(
            hook_event(
                HookReviewed, hook, detail=f"{verdict} by {reviewer.get_username()}: {reason}"
            )
        )
    return hook


def hook_set_enabled(
    *, hook: Hook, enabled: bool, by: str = "", reason: str = "", agent: Agent | None = None
) -> Hook:
    """Enable or disable a hook: staff (``by``: their username) or its own agent (``agent``).

    Only a hook staff (or policy) approved can be enabled again, and an agent's say is narrower
    than staff's (docs/hooks.md): it may disable its own hook, and enable again one it proposed
    that it (or the system, after failures in a row) disabled. A hook staff disabled is enabled
    again only by staff."""
    actor = f"agent:{agent.agent_id}" if agent is not None else f"staff:{by}"
    with transaction.atomic():
        hook = Hook.objects.select_for_update().get(pk=hook.pk)
        if agent is not None and hook.agent_id != agent.agent_id:
            raise HookError("unknown_hook", "no such hook of yours", field="hook_id", status=404)
        if hook.status in (Hook.Status.PROPOSED, Hook.Status.REJECTED):
            raise HookError("not_approved", f"this hook is {hook.status}", status=409)
        if enabled and hook.status != Hook.Status.ACTIVE:
            if agent is not None and hook.disabled_by not in (actor, "system"):
                raise HookError(
                    "staff_only",
                    f"this hook was disabled {hook.disabled_reason or 'by staff'}: only staff may "
                    "enable it again",
                    status=403,
                )
            if agent is not None and hook.proposed_by != actor:
                raise HookError(
                    "staff_only",
                    f"this hook was proposed by {hook.proposed_by}: only staff may enable it again",
                    status=403,
                )
            hook.status = Hook.Status.ACTIVE
            hook.consecutive_errors, hook.disabled_reason, hook.disabled_by = 0, "", ""
            hook.schedule_checked_at = timezone.now()
            hook.save()
            emit(hook_event(HookEnabled, hook, detail=f"by {actor.removeprefix('staff:')}"))
        elif not enabled and hook.status == Hook.Status.ACTIVE:
            hook.status = Hook.Status.DISABLED
            hook.disabled_reason = f"by {actor.removeprefix('staff:')}" + (
                f": {reason}" if reason else ""
            )
            hook.disabled_by = actor
            hook.save()
            emit(hook_event(HookDisabled, hook, detail=hook.disabled_reason))
    return hook


def hook_resource(hook: Hook) -> dict[str, Any]:
    """A hook as its agent and staff read it (``loop://hooks/{id}``)."""
    return {
        "uri": f"loop://hooks/{hook.pk}",
        "id": str(hook.pk),
        "agent_id": hook.agent_id,
        **{k: getattr(hook, k) for k in DEFINITION_FIELDS},
        "status": hook.status,
        "proposed_by": hook.proposed_by,
        "reviewed_by": hook.reviewed_by.get_username() if hook.reviewed_by else None,
        "review_reason": hook.review_reason,
        "disabled_reason": hook.disabled_reason,
        "evaluations": hook.evaluations,
        "fired": hook.fired,
        "consecutive_errors": hook.consecutive_errors,
        "last_error": hook.last_error,
        "last_fired_at": hook.last_fired_at.isoformat() if hook.last_fired_at else None,
    }


def hook_messages_take(agent: Agent) -> list[dict[str, Any]]:
    """The messages hooks queued for ``agent``'s next turn, handed over once."""
    with transaction.atomic():
        waiting = list(
            HookMessage.objects.select_for_update(skip_locked=True)
            .filter(agent=agent, delivered_at__isnull=True)
            .select_related("hook")
            .order_by("created_at")[:50]
        )
        if waiting:
            HookMessage.objects.filter(pk__in=[m.pk for m in waiting]).update(
                delivered_at=timezone.now()
            )
    return [
        {
            "id": str(m.pk),
            "hook": m.hook.name,
            "text": m.text,
            "event": m.event_ref,
            "at": m.created_at.isoformat(),
        }
        for m in waiting
    ]
