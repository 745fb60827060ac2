"""ACL policies (seed 003): who is asking decides what travels with the request.

A policy is a YAML document: a name, a priority, a ``when`` over the sender (``principal.*``),
the message (``message.channel``, ``message.is_group``) and the time (``context.hour``) in the
condition language of V-Pol rules, and an ``effect``. Policies are evaluated highest priority
first; the first whose ``when`` holds decides. An ``allow`` carries ``permissions`` (tool
patterns, data scopes) with every call of the chain the message starts, and may name the agent
that receives the message (``route_to``). No policy matching means deny: a sender nobody wrote a
policy for gets nothing.

This module is pure (no database): parsing with line-numbered errors, evaluation, and the checks
the broker's ``check_principal`` stage makes. docs/access.md is the reference.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from .conditions import condition_schema, holds

ACL_ROOTS = ("principal", "message", "context")
#: The facts an ACL condition may name (``acl_facts``): a misspelt field is refused on save
#: rather than never matching.
ACL_FIELDS = (
    r"^(principal\.(known|person_id|name|relationship|groups|participant_id"
    r"|attributes\.[A-Za-z0-9_]+)|message\.(channel|is_group|sender)|context\.hour)$"
)

#: Argument names that name a participant (data scope ``participant``).
PARTICIPANT_ARGUMENTS = ("participant_id", "participant")
#: Argument names that name who a message goes to (data scope ``recipient``).
RECIPIENT_ARGUMENTS = ("to", "recipient", "recipients", "cc", "bcc")

_SCOPED = frozenset(PARTICIPANT_ARGUMENTS + RECIPIENT_ARGUMENTS)

ACL_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["name", "priority", "when", "effect"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": r"^[a-z0-9][a-z0-9_-]{0,79}$"},
        "priority": {"type": "integer", "minimum": 0, "maximum": 1000},
        "description": {"type": "string"},
        "when": {"$ref": "#/$defs/condition"},
        "effect": {"enum": ["allow", "deny"]},
        "permissions": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "tools": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1, "maxLength": 120},
                },
                "scopes": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        # own: arguments naming a participant must name the sender's own
                        # (a participant) or the one they act for (family, carers).
                        "participant": {"enum": ["own", "any"]},
                        # sender: messages go back to the sender only.
                        "recipient": {"enum": ["sender", "any"]},
                        # see: answers to them skip the outbound PII filter (docs/channels.md).
                        "personal_info": {"enum": ["see", "redact"]},
                    },
                },
            },
        },
        "route_to": {"type": "string", "minLength": 1, "maxLength": 64},
        # The staff groups whose members may approve a grant for the people this policy covers
        # (a person grant, docs/access.md); beyond them only staff with that permission.
        "owners": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 150},
            "uniqueItems": True,
        },
    },
    "allOf": [
        {
            "if": {"properties": {"effect": {"const": "deny"}}},
            "then": {"not": {"required": ["permissions"]}},
        }
    ],
    "$defs": {"condition": condition_schema(ACL_ROOTS, pattern=ACL_FIELDS)},
}
_VALIDATOR = Draft202012Validator(ACL_SCHEMA)


class AclDocumentError(ValueError):
    """A policy document that does not parse or does not fit ``ACL_SCHEMA``: ``problems`` are
    ``(line, path, message)``, line 1-based (0: the document as a whole)."""

    def __init__(self, problems: list[tuple[int, str, str]]):
        self.problems = problems
        super().__init__("; ".join(self.lines()))

    def lines(self) -> list[str]:
        return [
            f"line {line}: {path + ': ' if path else ''}{message}" if line else message
            for line, path, message in self.problems
        ]


def _line_of(node: yaml.Node | None, path: Sequence[Any]) -> int:
    """The 1-based line of the node at ``path`` (the deepest one that exists)."""
    line = node.start_mark.line + 1 if node is not None else 0
    for part in path:
        if isinstance(node, yaml.MappingNode):
            found = next((v for k, v in node.value if k.value == part), None)
            if found is None:  # a missing key: the mapping's own line
                break
            node = found
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
        else:
            break
        line = node.start_mark.line + 1
    return line


#: libyaml's safe loader where PyYAML was built with it (as its wheels are): the pure-Python one
#: took about 14 ms a policy.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def acl_parse(text: str) -> dict[str, Any]:
    """One policy document → its spec, or AclDocumentError with line-numbered problems."""
    loader = _Loader(text)
    try:  # read once: the node tree (for line numbers) and the document built from it
        node = loader.get_single_node()
        spec = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 0
        problem = getattr(exc, "problem", None) or str(exc)
        raise AclDocumentError([(line, "", f"not YAML: {problem}")]) from exc
    finally:
        loader.dispose()
    if not isinstance(spec, dict):
        raise AclDocumentError([(1, "", "a policy is a mapping (name, priority, when, effect)")])
    problems = []
    for error in sorted(_VALIDATOR.iter_errors(spec), key=lambda e: list(map(str, e.path))):
        if error.context:  # a condition that fits no form: what is wrong in the form it meant
            error = _meant(error)
        path = list(error.absolute_path)
        message = error.message
        if error.validator == "not" and path == []:
            message = "a deny policy carries no permissions"
        problems.append((_line_of(node, path), "/".join(map(str, path)), message))
    if problems:
        raise AclDocumentError(problems)
    return spec


_FORMS = ("all", "any", "not", "field")  # the condition's oneOf, in order


def _meant(error: ValidationError) -> ValidationError:
    """For a condition that fits none of its forms, the error of the form its keys name."""
    instance = error.instance if isinstance(error.instance, dict) else {}
    meant = next((i for i, key in enumerate(_FORMS) if key in instance), None)
    errors = [e for e in error.context or () if meant is None or e.schema_path[0] == meant]
    found = best_match(errors or error.context or [error])
    assert found is not None
    return _meant(found) if found.context else found


def acl_documents(text: str) -> list[str]:
    """A file of policies (YAML documents separated by ``---``) → each document's text."""
    documents: list[str] = []
    current: list[str] = []
    for line in text.splitlines(keepends=True):
        if line.rstrip() == "---":
            documents.append("".join(current))
            current = []
        else:
            current.append(line)
    documents.append("".join(current))
    return [doc for doc in documents if doc.strip() and not _only_comments(doc)]


def _only_comments(doc: str) -> bool:
    return all(not line.strip() or line.lstrip().startswith("#") for line in doc.splitlines())


# --- Evaluation ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class AclDecision:
    """What the ACL said for a sender: the policy (None: none matched, so deny), its effect,
    the tool patterns and scopes that travel with the request, and the agent to route to."""

    policy: str | None
    version: int | None
    effect: str
    tools: tuple[str, ...] = ()
    scopes: Mapping[str, str] = field(default_factory=dict)
    route_to: str | None = None
    owners: tuple[str, ...] = ()
    # tool id → permitted, filled as calls ask (a decision is kept per policy set and sender).
    _permitted: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    @property
    def allows(self) -> bool:
        return self.effect == "allow"

    def as_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "version": self.version,
            "effect": self.effect,
            "tools": list(self.tools),
            "scopes": dict(self.scopes),
            "route_to": self.route_to,
            "owners": list(self.owners),
        }

    def label(self) -> str:
        return f"ACL policy {self.policy} v{self.version}" if self.policy else "no ACL policy"


NO_POLICY = AclDecision(None, None, "deny")


def acl_decide(policies: Sequence[Mapping[str, Any]], facts: Mapping[str, Any]) -> AclDecision:
    """``policies``: active specs with their ``version``, highest priority first (the
    registry's order). First match wins; no match denies."""
    for spec in policies:
        if holds(spec["when"], facts):
            permissions = spec.get("permissions") or {}
            return AclDecision(
                spec["name"],
                spec.get("version"),
                spec["effect"],
                tuple(permissions.get("tools") or ()),
                dict(permissions.get("scopes") or {}),
                spec.get("route_to"),
                tuple(spec.get("owners") or ()),
            )
    return NO_POLICY


def acl_facts(principal: Mapping[str, Any], *, hour: int) -> dict[str, Any]:
    """The facts ACL conditions read, from a principal as the inbound message recorded it."""
    return {
        "principal": {
            "known": principal.get("known", False),
            "person_id": principal.get("person_id"),
            "name": principal.get("name"),
            "relationship": principal.get("relationship", "unknown"),
            "groups": principal.get("groups") or [],
            "participant_id": principal.get("participant_id"),
            "attributes": principal.get("attributes") or {},
        },
        "message": {
            "channel": principal.get("channel"),
            "is_group": principal.get("is_group", False),
            "sender": principal.get("sender"),
        },
        "context": {"hour": hour},
    }


def tool_permitted(decision: AclDecision, tool_id: str) -> bool:
    found = decision._permitted.get(tool_id)
    if found is None:
        found = decision._permitted[tool_id] = decision.allows and any(
            fnmatch.fnmatchcase(tool_id, pat) for pat in decision.tools
        )
    return found


_CACHE: dict[tuple[int, str, int], tuple[Sequence[Mapping[str, Any]], AclDecision]] = {}
_CACHE_MAX = 10_000


def acl_decide_cached(
    policies: Sequence[Mapping[str, Any]], principal: Mapping[str, Any], key: str, *, hour: int
) -> AclDecision:
    """``acl_decide`` for a principal whose stored text is ``key``, kept per policy set (the
    registry's list, by identity: a change makes a new list) so a chain's calls decide once."""
    slot = (id(policies), key, hour)
    entry = _CACHE.get(slot)
    if entry is not None and entry[0] is policies:
        return entry[1]
    decision = acl_decide(policies, acl_facts(principal, hour=hour))
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[slot] = (policies, decision)
    return decision


def _named(arguments: Mapping[str, Any], names: Sequence[str]) -> list[tuple[str, str]]:
    found = []
    for name in names:
        value = arguments.get(name)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str | int) and not isinstance(item, bool):
                found.append((name, str(item)))
    return found


def scope_violation(
    scopes: Mapping[str, str], principal: Mapping[str, Any], arguments: Mapping[str, Any]
) -> str | None:
    """Why ``arguments`` reach outside the sender's data ``scopes`` (a decision's, possibly
    widened by a grant), or None."""
    if not scopes or not (arguments.keys() & _SCOPED):
        return None
    if scopes.get("participant") == "own":
        own = principal.get("participant_id")
        for name, value in _named(arguments, PARTICIPANT_ARGUMENTS):
            if value != own:
                allowed = f"only {own}" if own else "no participant's"
                return f"{name} {value} is outside the sender's records ({allowed})"
    if scopes.get("recipient") == "sender":
        sender = _digits_or_lower(principal.get("sender") or "")
        for name, value in _named(arguments, RECIPIENT_ARGUMENTS):
            if _digits_or_lower(value) != sender:
                return f"{name} {value} is not the sender: replies go to the sender only"
    return None


def _digits_or_lower(address: str) -> str:
    """+61 400 000 101, 0400000101 and 61400000101 compare equal; e-mail case-insensitively."""
    if "@" in address:
        return address.strip().lower()
    digits = "".join(ch for ch in address if ch.isdigit())
    if digits.startswith("0"):
        digits = "61" + digits[1:]
    return digits
