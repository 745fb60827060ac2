"""The baseline's channel tools (docs/channels.md): answers and chat, governed like any outbound
message. Plain data, part of ``baseline.SYSTEM_TOOLS``."""

from __future__ import annotations

from typing import Any

_CHAT_TEXT = {"type": "string", "minLength": 1, "maxLength": 20000}
_OUTBOUND_RESULT = {
    "type": "object",
    "required": ["outbound_id", "channel", "to", "state"],
    "properties": {
        "outbound_id": {"type": "string"},
        "channel": {"type": "string"},
        "to": {"type": "string"},
        "state": {"type": "string"},
        "segments": {"type": "integer"},
        "truncated": {"type": "boolean"},
        "subject": {"type": "string"},
    },
}

#: Channels both ways (docs/channels.md): answers and chat, governed like any outbound message.
CHANNEL_TOOLS: list[dict[str, Any]] = [
    {
        "tool_id": "channel.reply",
        "description": (
            "Answer the person whose message opened a turn of yours, on the channel and to the "
            "address it came from (you never name them: they are the turn's). The control plane "
            "sends your turn's answer this way when you complete it; call it yourself only for a "
            "word before the answer (\"I'm checking the roster\"). The channel's rules are "
            "applied for you: SMS plain text cut to a few segments, e-mail in the original's "
            "thread, chat in Markdown."
        ),
        "category": "comms",
        "agent_access": ["*"],
        "risk_level": "write",
        "execution_mode": "review",
        "validation_mode": "intercept",
        "context_bucket": "comms_participant_carer",
        "monitoring_level": 4,
        "data_class": "pii",
        "permission_tier": "WRITE_SAFE",
        "external_channel": True,
        "handler_type": "function",
        "handler_config": {"callable": "rabs.channel_reply"},
        "reviewer_summary": "Sends the agent's answer back to the person who wrote, on the "
        "channel and to the address their message came from (SMS, e-mail or chat).",
        "input_schema": {
            "type": "object",
            "required": ["text"],
            "additionalProperties": False,
            "properties": {"text": _CHAT_TEXT, "turn_id": {"type": "string", "format": "uuid"}},
        },
        "output_schema": _OUTBOUND_RESULT,
    },
    {
        "tool_id": "chat.assistant.post",
        "description": (
            "Post in a chat room as your own bot account (Markdown is rendered): the room of the "
            "chat your task came from, or a room of yours by room_id. Your own posts never wake "
            "you or a hook; people's posts in your rooms come to you as messages."
        ),
        "category": "comms",
        "agent_access": ["*"],
        "risk_level": "write",
        "execution_mode": "review",
        "validation_mode": "intercept",
        "context_bucket": "comms_participant_carer",
        "monitoring_level": 4,
        "data_class": "pii",
        "permission_tier": "WRITE_SAFE",
        "external_channel": True,
        "handler_type": "function",
        "handler_config": {"callable": "rabs.chat_assistant_post"},
        "reviewer_summary": "Posts a message as the agent in a chat room of the business's "
        "chat server.",
        "input_schema": {
            "type": "object",
            "required": ["text"],
            "additionalProperties": False,
            "properties": {
                "text": _CHAT_TEXT,
                "room_id": {"type": "string", "minLength": 2, "maxLength": 255},
            },
        },
        "output_schema": _OUTBOUND_RESULT,
    },
    {
        "tool_id": "chat.room.read",
        "description": (
            "Read the latest messages of a chat room of yours, straight from the homeserver: the "
            "room of the chat your task came from, or one by room_id."
        ),
        "category": "comms",
        "agent_access": ["*"],
        "risk_level": "read",
        "execution_mode": "auto",
        "validation_mode": "monitor",
        "context_bucket": "comms_participant_carer",
        "monitoring_level": 4,
        "data_class": "pii",
        "permission_tier": "READ_ONLY",
        # It reads another system (the homeserver): audited first, then run, like a send.
        "external_channel": True,
        "handler_type": "function",
        "handler_config": {"callable": "rabs.chat_room_read"},
        "reviewer_summary": "Reads the recent messages of a chat room the agent is in.",
        "input_schema": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "room_id": {"type": "string", "minLength": 2, "maxLength": 255},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
            },
        },
        "output_schema": {
            "type": "object",
            "required": ["room_id", "messages"],
            "properties": {"room_id": {"type": "string"}, "messages": {"type": "array"}},
        },
    },
]
