"""Access control services (docs/access.md): the principal of an inbound message, the ACL
decision for it, and policies loaded from and dumped to YAML files."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from brainframe.models import AclPolicy, Person
from brainframe.safety.policy.acl import (
    AclDecision,
    AclDocumentError,
    acl_decide,
    acl_documents,
    acl_facts,
    acl_parse,
)


def principal_of(
    person: Person | None, *, channel: str, sender: str, is_group: bool
) -> dict[str, Any]:
    """Who sent a message, as the chain it starts carries it (``OriginRegistry.principal``)."""
    participant = None
    if person is not None:
        own = person if person.relationship == Person.Relationship.PARTICIPANT else person.acts_for
        participant = (own.attributes or {}).get("participant_id") if own else None
    return {
        "known": person is not None,
        "person_id": str(person.pk) if person else None,
        "name": person.name if person else None,
        "relationship": person.relationship if person else "unknown",
        "groups": list(person.groups) if person else [],
        "participant_id": participant,
        "attributes": dict(person.attributes or {}) if person else {},
        "channel": channel,
        "sender": sender,
        "is_group": is_group,
    }


def acl_specs() -> list[dict[str, Any]]:
    """The active policies' specs with their versions, highest priority first."""
    return [
        {**spec, "version": version}
        for spec, version in AclPolicy.objects.filter(active=True)
        .order_by("-priority", "name")
        .values_list("spec", "version")
    ]


def acl_for(principal: dict[str, Any]) -> AclDecision:
    """The ACL decision for a message's sender, at the hour it came (else now, in the business's
    time zone)."""
    hour = principal.get("hour", timezone.localtime().hour)
    return acl_decide(acl_specs(), acl_facts(principal, hour=hour))


@dataclass(frozen=True)
class LoadResult:
    created: list[str]
    updated: list[str]
    unchanged: list[str]


def acl_load(text: str) -> LoadResult:
    """Every policy in a file (documents separated by ``---``), all or none: a document with a
    problem raises AclDocumentError whose lines say which document (by its first line in the
    file) and where."""
    documents = acl_documents(text)
    problems: list[tuple[int, str, str]] = []
    offset, specs = 0, []
    for doc in documents:
        start = text.index(doc, offset)
        first_line = text.count("\n", 0, start)
        offset = start + len(doc)
        try:
            specs.append((doc, acl_parse(doc)))
        except AclDocumentError as exc:
            problems.extend((line + first_line if line else 0, p, m) for line, p, m in exc.problems)
    names = [spec["name"] for _, spec in specs]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        problems.append((0, "", f"policy names repeat in the file: {', '.join(repeated)}"))
    if problems:
        raise AclDocumentError(problems)
    result = LoadResult([], [], [])
    with transaction.atomic():
        for doc, spec in specs:
            policy = AclPolicy.objects.filter(name=spec["name"]).first()
            if policy is None:
                policy = AclPolicy(document=doc.strip() + "\n")
                _checked(policy)
                result.created.append(spec["name"])
            elif policy.spec == spec and policy.active:
                result.unchanged.append(spec["name"])
                continue
            else:
                policy.document, policy.active = doc.strip() + "\n", True
                _checked(policy)
                result.updated.append(spec["name"])
            policy.save()
    return result


def _checked(policy: AclPolicy) -> None:
    try:
        policy.clean()
    except ValidationError as exc:
        lines = [str(m) for messages in exc.message_dict.values() for m in messages]
        raise AclDocumentError([(0, "", line) for line in lines]) from exc


def acl_dump(*, include_inactive: bool = False) -> str:
    """The policies as one YAML file, highest priority first (``acl_load`` reads it back)."""
    policies = AclPolicy.objects.order_by("-priority", "name")
    if not include_inactive:
        policies = policies.filter(active=True)
    return "---\n".join(p.document.rstrip() + "\n" for p in policies)
