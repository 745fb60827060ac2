"""Demo data loader behind ``manage.py seed_brainframe`` (``--baseline``: the governance baseline a
deployment starts from, without the demo agents, tools and work).

Idempotent: rows are created when missing and never overwritten, so running it twice gives the
same rows and a staff member's later edits (a disabled tool, a reworded note) survive a re-seed.
"""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import Model

from brainframe import demo_data
from brainframe.bucket_hints import BUCKET_HINTS
from brainframe.choices import (
    BUCKET_SCOPES,
    ContextBucket,
    default_execution_mode,
    default_monitoring_ceiling,
    default_permission_tier,
)
from brainframe.models import (
    AclPolicy,
    Agent,
    AgentNote,
    AgentTask,
    ChannelIdentity,
    ConstitutionRule,
    ContextBucketDefinition,
    ContextBucketEntry,
    Hook,
    MacRule,
    ModelPrice,
    Person,
    PrimeDirective,
    Tool,
    ValidationPolicy,
)
from brainframe.safety.policy import baseline
from brainframe.services.access.acl import acl_load
from brainframe.services.hooks.lifecycle import hook_propose
from brainframe.services.registry.replica import replica_views_register

# Stable ids for demo tasks, so a re-seed finds the rows it made.
_TASK_NAMESPACE = uuid.UUID("9a4c4f0e-2f7b-4d3c-9a51-5b8e0d1c7f21")
DEMO_ACL = Path(__file__).resolve().parent.parent / "policies" / "acl_demo.yaml"


def seed_brainframe(*, baseline_only: bool = False) -> Counter[str]:
    """Create whatever rows are missing. Returns how many of each kind were created.

    ``baseline_only``: only what a deployment governs with before anyone adds anything (the
    reviewer groups and roles, the context buckets, the prime directives, the constitution, the
    model prices, the broker's own tools), none of the demo agents, tools, policies, notes,
    tasks or observations.
    """
    created: Counter[str] = Counter()
    with transaction.atomic():
        _seed_baseline(created)
        if not baseline_only:
            _seed_demo(created)
    return created


def _seed_baseline(created: Counter[str]) -> None:
    for name in [*baseline.REVIEWER_GROUPS, *baseline.ROLES]:
        created["groups"] += Group.objects.get_or_create(name=name)[1]

    for number, bucket in enumerate(ContextBucket.values, start=1):
        hints = BUCKET_HINTS[bucket]
        _, was_created = ContextBucketDefinition.objects.get_or_create(
            bucket=bucket,
            defaults={"number": number, "scope": BUCKET_SCOPES[bucket], **hints},
        )
        created["buckets"] += was_created
        # Buckets seeded before the checker had hints get them; staff edits are kept.
        created["bucket_hints"] += ContextBucketDefinition.objects.filter(
            bucket=bucket, keywords=[], exemplars=[]
        ).update(**hints)

    created["directives"] += _create_missing(PrimeDirective, "code", baseline.PRIME_DIRECTIVES)
    created["constitution_rules"] += _create_missing(
        ConstitutionRule, "code", baseline.CONSTITUTION
    )
    created["mac_rules"] += _create_missing(MacRule, "code", baseline.MAC_RULES)
    created["model_prices"] += _create_missing(ModelPrice, "model", demo_data.MODEL_PRICES)
    created["system_tools"] += _create_missing(Tool, "tool_id", baseline.SYSTEM_TOOLS)
    created["replica_views"] += replica_views_register()


def _seed_demo(created: Counter[str]) -> None:
    created["agents"] += _create_missing(Agent, "agent_id", demo_data.AGENTS)
    created["tools"] += _create_missing(
        Tool, "tool_id", [_tool_defaults(t) for t in demo_data.TOOLS]
    )
    created["validation_policies"] += _create_missing(
        ValidationPolicy, "name", demo_data.VALIDATION_POLICIES
    )

    for note in demo_data.NOTES:
        created["notes"] += AgentNote.objects.get_or_create(
            agent_id=note["agent_id"],
            content=note["content"],
            defaults={
                "priority": note["priority"],
                "note_type": note.get("note_type", AgentNote.NoteType.STANDING_INSTRUCTION),
            },
        )[1]

    for agent_id, title, status, priority, payload in demo_data.TASKS:
        created["tasks"] += AgentTask.objects.get_or_create(
            task_id=uuid.uuid5(_TASK_NAMESPACE, f"{agent_id}:{title}"),
            defaults={
                "agent_id": agent_id,
                "title": title,
                "status": status,
                "priority": priority,
                "payload": payload,
            },
        )[1]

    _seed_hooks(created)
    _seed_people(created)
    _seed_acl(created)

    for (
        bucket,
        entity,
        pattern,
        text,
        severity,
        repeatable,
        frequency,
    ) in demo_data.OBSERVATIONS:
        created["observations"] += ContextBucketEntry.objects.get_or_create(
            bucket=bucket,
            entity=entity,
            pattern_type=pattern,
            defaults={
                "observation": text,
                "severity": severity,
                "repeatable": repeatable,
                "frequency": frequency,
                "current_score": severity * frequency * repeatable,
            },
        )[1]


def _seed_hooks(created: Counter[str]) -> None:
    for agent_id, definition in demo_data.HOOKS:
        if not Hook.objects.filter(agent_id=agent_id, name=definition["name"]).exists():
            hook_propose(
                agent=Agent.objects.get(agent_id=agent_id),
                definition=definition,
                proposed_by="demo data",
            )
            created["hooks"] += 1


def _seed_people(created: Counter[str]) -> None:
    """The demo people and their channel identities (kept as they are if already there)."""
    by_name: dict[str, Person] = {}
    for spec in demo_data.PEOPLE:
        person, made = Person.objects.get_or_create(
            name=spec["name"],
            defaults={
                "relationship": spec["relationship"],
                "groups": spec["groups"],
                "acts_for": by_name.get(spec.get("acts_for", "")),
                "attributes": spec.get("attributes", {}),
            },
        )
        by_name[person.name] = person
        created["people"] += made
        for channel, address in spec["identities"]:
            ChannelIdentity.objects.get_or_create(
                channel=channel, address=address, defaults={"person": person}
            )


def _seed_acl(created: Counter[str]) -> None:
    """The demo ACL policies (``brainframe/policies/acl_demo.yaml``), unless staff have written
    any policy of their own already."""
    if AclPolicy.objects.exists():
        return
    created["acl_policies"] += len(acl_load(DEMO_ACL.read_text()).created)


def _create_missing(model: type[Model], key: str, rows: list[dict[str, Any]]) -> int:
    """Create the rows whose ``key`` is not in the table yet; leave existing ones alone. The keys
    there are read in one query, and each missing row is saved as the model saves it (signals,
    its own ``save``); a row another seeder wrote meanwhile fails the whole seed, which
    writes nothing and can be run again."""
    manager = model._default_manager
    there = set(
        manager.filter(**{f"{key}__in": [row[key] for row in rows]}).values_list(key, flat=True)
    )
    missing = [row for row in rows if row[key] not in there]
    for row in missing:
        manager.create(**row)
    return len(missing)


def _tool_defaults(tool: dict[str, Any]) -> dict[str, Any]:
    values = dict(tool)
    values["execution_mode"] = values["execution_mode"] or default_execution_mode(
        tool["risk_level"]
    )
    values["monitoring_ceiling"] = default_monitoring_ceiling(tool["risk_level"])
    values["permission_tier"] = values["permission_tier"] or default_permission_tier(
        tool["risk_level"]
    )
    return values
