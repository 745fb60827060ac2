"""Inbound channels (docs/ledgers.md): a provider's bearer token checked against its adapter, the
provider's payload read as one message, and what a channel can carry (seed 003 response
formatting: the context a turn starts with)."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Any

from brainframe.models import Channel, ChannelAdapter
from brainframe.services.ledger.ledgers import LedgerRefusal

#: What each channel can carry when its adapter does not say (seed 003 response formatting).
CHANNEL_DEFAULTS: dict[str, dict[str, Any]] = {
    Channel.SMS: {"max_length": 1600, "markdown": False},
    Channel.EMAIL: {"max_length": 0, "markdown": False},
    Channel.CHAT: {"max_length": 4000, "markdown": True},
}

_GUIDANCE: dict[str, str] = {
    Channel.SMS: "Plain text for a phone: short sentences, no Markdown, no links unless asked.",
    Channel.EMAIL: "An e-mail: a greeting, plain paragraphs, a sign-off; no Markdown.",
    Channel.CHAT: "A chat message: brief; Markdown is rendered.",
}


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def adapter_authenticate(name: str, token: str) -> ChannelAdapter:
    adapter = ChannelAdapter.objects.select_related("agent").filter(name=name).first()
    if adapter is None or not adapter.active:
        raise LedgerRefusal(404, "unknown_channel", f"no active channel adapter {name!r}")
    if not token or not hmac.compare_digest(adapter.token_hash, token_hash(token)):
        raise LedgerRefusal(401, "bad_channel_token", "the channel's bearer token does not match")
    return adapter


def channel_context(channel: str, adapter: ChannelAdapter | None = None) -> dict[str, Any]:
    """What goes into a turn's context at its start: the delivery channel, its limits, and how
    to write for it."""
    caps = dict(CHANNEL_DEFAULTS.get(channel, {"max_length": 0, "markdown": True}))
    if adapter is not None:
        caps = {"max_length": adapter.max_length, "markdown": adapter.markdown}
    guidance = _GUIDANCE.get(channel, "")
    if caps["max_length"]:
        guidance += f" At most {caps['max_length']} characters."
    return {"channel": channel, **caps, "guidance": guidance.strip()}


@dataclass(frozen=True)
class InboundMessage:
    external_id: str
    sender: str
    text: str
    is_group: bool = False
    conversation: str = ""  # a group chat's id: the session is the group's, not the sender's
    subject: str = ""


def _text_field(payload: dict[str, Any], name: str, *, required: bool = True) -> str:
    value = payload.get(name, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise LedgerRefusal(
            400, "invalid_message", f"{name} is required and must be a non-empty string", name
        )
    if len(value) > 100_000:
        raise LedgerRefusal(400, "invalid_message", f"{name} is longer than 100,000", name)
    return value


def message_parse(channel: str, payload: Any) -> InboundMessage:
    """The provider's payload as one message. SMS: ``message_id``, ``from``, ``body``; e-mail:
    ``message_id``, ``from``, ``subject``, ``text``; chat: ``message_id``, ``sender``, ``text``,
    optionally ``chat_id`` and ``is_group``."""
    if not isinstance(payload, dict):
        raise LedgerRefusal(400, "invalid_message", "the body must be a JSON object", None)
    external_id = _text_field(payload, "message_id")
    if channel == Channel.SMS:
        return InboundMessage(
            external_id, _text_field(payload, "from"), _text_field(payload, "body")
        )
    if channel == Channel.EMAIL:
        subject = _text_field(payload, "subject", required=False)
        text = _text_field(payload, "text")
        return InboundMessage(
            external_id,
            _text_field(payload, "from"),
            f"{subject}\n\n{text}" if subject else text,
            subject=subject,
        )
    is_group = payload.get("is_group", False)
    if not isinstance(is_group, bool):
        raise LedgerRefusal(400, "invalid_message", "is_group must be true or false", "is_group")
    chat_id = _text_field(payload, "chat_id", required=is_group)
    return InboundMessage(
        external_id,
        _text_field(payload, "sender"),
        _text_field(payload, "text"),
        is_group=is_group,
        conversation=chat_id,
    )
