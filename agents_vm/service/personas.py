"""Personas and routing (seed 003): who answers a message, and as whom.

A **persona** is an identity, not a permission (the control plane's ACL decides what may be
done): its ``SOUL.md`` (character, values, how it speaks) and ``IDENTITY.md`` (who it is, what it
does) texts, the channels it answers on and its **accounts** there (the address it speaks as on
each channel). An agent has one or several; the Dreamer reads the chosen persona's texts first.

Routing follows the seed's hierarchy, **Thread (bedrock) → Session → Persona**: a binding of the
message's thread wins, else a binding of its session (``agent:<agent>:<channel>:<address>``),
else the persona that answers on the message's channel, else the agent's default persona. The
**smart** flag may be set at any of those levels (the thread's, the session's, the persona's,
the agent's); the most specific level that sets it decides. A smart route asks the control
plane's index (discovery) which agent fits the message best and hands the message over when
that is another agent.

Configuration (``[personas.<name>]`` and ``[routing]`` in the agent's TOML)::

    [personas.reception]
    soul_file = "personas/reception/SOUL.md"       # or soul = "…" inline
    identity_file = "personas/reception/IDENTITY.md"
    channels = ["sms", "chat"]
    accounts = { sms = "+61 7 5555 0100" }
    smart = false                                  # optional

    [routing]
    default_persona = "reception"
    smart = false
    sessions = { "agent:reggie:sms:+61412345678" = { persona = "family-desk" } }
    threads = { "6f1c…" = { smart = true } }
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: A persona's text read from a file is capped (it goes into every prompt).
MAX_PERSONA_TEXT = 8000


class PersonaError(ValueError):
    """A persona or routing setting is malformed (the message names the setting)."""


@dataclass(frozen=True)
class Persona:
    name: str
    soul: str
    identity: str
    channels: tuple[str, ...] = ()
    accounts: dict[str, str] = field(default_factory=dict)
    smart: bool | None = None

    def prompt(self, channel: str) -> str:
        """What the Dreamer reads first: who it is, and the account it speaks as here."""
        lines = [f"You are speaking as the persona {self.name!r}."]
        if self.identity:
            lines += ["", "IDENTITY:", self.identity.strip()]
        if self.soul:
            lines += ["", "SOUL:", self.soul.strip()]
        account = self.accounts.get(channel)
        if account:
            lines += ["", f"On {channel} you speak as {account}."]
        return "\n".join(lines)


@dataclass(frozen=True)
class Binding:
    """A routing binding of a thread or a session: a persona, the smart flag, or both."""

    persona: str | None = None
    smart: bool | None = None


@dataclass(frozen=True)
class Routing:
    default_persona: str | None = None
    smart: bool = False
    sessions: dict[str, Binding] = field(default_factory=dict)
    threads: dict[str, Binding] = field(default_factory=dict)


@dataclass(frozen=True)
class Route:
    """Where a message goes: the persona that answers (and the level that chose it), and whether
    routing is smart (and the level that said so)."""

    persona: Persona | None
    persona_from: str
    smart: bool
    smart_from: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "persona": self.persona.name if self.persona else None,
            "persona_from": self.persona_from,
            "smart": self.smart,
            "smart_from": self.smart_from,
        }


def _text(section: dict[str, Any], name: str, where: str, base: Path) -> str:
    inline, file_key = section.get(name), section.get(f"{name}_file")
    if inline is not None and file_key is not None:
        raise PersonaError(f"{where}: give {name} or {name}_file, not both")
    if file_key is not None:
        if not isinstance(file_key, str):
            raise PersonaError(f"{where}.{name}_file must be a path")
        path = Path(file_key)
        path = path if path.is_absolute() else base / path
        try:
            return path.read_text()[:MAX_PERSONA_TEXT]
        except OSError as exc:
            raise PersonaError(f"{where}.{name}_file: cannot read {path}: {exc.strerror}") from exc
    if inline is None:
        return ""
    if not isinstance(inline, str):
        raise PersonaError(f"{where}.{name} must be text")
    return inline[:MAX_PERSONA_TEXT]


def _flag(section: dict[str, Any], where: str) -> bool | None:
    value = section.get("smart")
    if value is not None and not isinstance(value, bool):
        raise PersonaError(f"{where}.smart must be true or false")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise PersonaError(f"{where} must be a list of names")
    return tuple(value)


def personas_load(raw: Any, base: Path) -> dict[str, Persona]:
    """``[personas.<name>]`` tables; texts from files relative to ``base``."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise PersonaError("personas: a table of personas by name")
    out: dict[str, Persona] = {}
    for name, section in raw.items():
        where = f"personas.{name}"
        if not isinstance(section, dict):
            raise PersonaError(f"{where} must be a table")
        accounts = section.get("accounts", {})
        if not isinstance(accounts, dict) or not all(
            isinstance(v, str) and v for v in accounts.values()
        ):
            raise PersonaError(f"{where}.accounts: a table of channel = address")
        out[name] = Persona(
            name=name,
            soul=_text(section, "soul", where, base),
            identity=_text(section, "identity", where, base),
            channels=_strings(section.get("channels", []), f"{where}.channels"),
            accounts=dict(accounts),
            smart=_flag(section, where),
        )
    return out


def _bindings(raw: Any, where: str, personas: dict[str, Persona]) -> dict[str, Binding]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise PersonaError(f"{where}: a table of bindings by key")
    out = {}
    for key, section in raw.items():
        here = f"{where}.{key}"
        if isinstance(section, str):  # shorthand: key = "persona"
            section = {"persona": section}
        if not isinstance(section, dict):
            raise PersonaError(f"{here}: a persona name or {{persona = …, smart = …}}")
        persona = section.get("persona")
        if persona is not None and persona not in personas:
            raise PersonaError(f"{here}.persona: no persona named {persona!r}")
        out[str(key)] = Binding(persona=persona, smart=_flag(section, here))
    return out


def routing_load(raw: Any, personas: dict[str, Persona]) -> Routing:
    if raw is None:
        return Routing()
    if not isinstance(raw, dict):
        raise PersonaError("routing must be a table")
    default = raw.get("default_persona")
    if default is not None and default not in personas:
        raise PersonaError(f"routing.default_persona: no persona named {default!r}")
    return Routing(
        default_persona=default,
        smart=bool(_flag(raw, "routing")),
        sessions=_bindings(raw.get("sessions"), "routing.sessions", personas),
        threads=_bindings(raw.get("threads"), "routing.threads", personas),
    )


def route_resolve(
    *,
    personas: dict[str, Persona],
    routing: Routing,
    thread: str | None,
    session: str | None,
    channel: str,
) -> Route:
    """Thread → Session → Persona: the persona that answers and whether the route is smart."""
    thread_binding = routing.threads.get(thread or "", Binding())
    session_binding = routing.sessions.get(session or "", Binding())
    by_channel = next((p for p in personas.values() if channel in p.channels), None)
    default = personas.get(routing.default_persona or "")
    chosen: tuple[Persona | None, str]
    if thread_binding.persona:
        chosen = (personas[thread_binding.persona], "thread")
    elif session_binding.persona:
        chosen = (personas[session_binding.persona], "session")
    elif by_channel is not None:
        chosen = (by_channel, "channel")
    elif default is not None:
        chosen = (default, "agent")
    else:
        chosen = (None, "none")
    persona = chosen[0]
    levels: list[tuple[str, bool | None]] = [
        ("thread", thread_binding.smart),
        ("session", session_binding.smart),
        ("persona", persona.smart if persona else None),
        ("agent", routing.smart),
    ]
    smart_from, smart = next(((lvl, v) for lvl, v in levels if v is not None), ("agent", False))
    return Route(persona=persona, persona_from=chosen[1], smart=bool(smart), smart_from=smart_from)
