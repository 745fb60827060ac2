"""The board's websocket: pushes the same partials the pages render (HTMX out-of-band swaps)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from brainframe.events import BOARD_GROUP, Event, ToolCallChanged, event_from_wire
from dashboard.live.render import (
    CONVERSATION_FAMILY,
    ran_after_approval,
    render_approved_call,
    render_call_event,
    render_conversation_refresh,
    render_event,
    render_feed_row,
    renders,
)


class BoardConsumer(AsyncWebsocketConsumer):
    """One per open board. Anonymous sockets are refused; events arrive via the channel layer."""

    feed = ""
    feed_agent = ""
    feed_name = ""
    conversation = ""  # the conversations page ("all") or one thread's page (its id)

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        # The event log page's socket (``?feed=all`` or ``?feed=<family>``) also gets each kept
        # event as a feed row.
        query = parse_qs(self.scope.get("query_string", b"").decode())
        self.feed = (query.get("feed") or [""])[0]
        self.feed_agent = (query.get("agent") or [""])[0]
        self.feed_name = (query.get("name") or [""])[0]
        self.conversation = (query.get("conversation") or [""])[0]
        await self.channel_layer.group_add(BOARD_GROUP, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(BOARD_GROUP, self.channel_name)

    async def board_events(self, message: dict[str, Any]) -> None:
        """Everything one channel-layer message carries goes to the page as one frame, in order:
        the page parses and swaps it in one pass (a frame per row cost the browser more than
        the rows themselves at a hundred calls a second)."""
        parts: list[str] = []
        for item in message["events"]:
            event = event_from_wire(item)
            if event is not None:
                parts += await self._render(event)
        if parts:
            await self.send(text_data="\n".join(parts))

    def _feed_wants(self, event: Event) -> bool:
        if not self.feed or not event.LOGGED:
            return False
        if self.feed != "all" and event.family() != self.feed:
            return False
        if self.feed_name and self.feed_name != event.NAME:
            return False
        return not self.feed_agent or event.__dict__.get("agent_id") == self.feed_agent

    async def _render(self, event: Event) -> list[str]:
        """The out-of-band swaps that show ``event`` on this socket's page (none: not shown)."""
        parts = []
        if self._feed_wants(event):
            parts.append(render_feed_row(event))
        if self.conversation and event.family() == CONVERSATION_FAMILY:
            parts.append(render_conversation_refresh(event, self.conversation))
        # A tool call's row needs no database read: render it here rather than queue it on the
        # consumers' one synchronous thread at high call rates; events the board does not show
        # (a Guardian assessment per call) are dropped here.
        if isinstance(event, ToolCallChanged):
            parts.append(render_call_event(event))
            if ran_after_approval(event):
                user = self.scope["user"]
                parts.append(await database_sync_to_async(render_approved_call)(event, user))
        elif renders(event):
            parts.append(await database_sync_to_async(render_event)(event, self.scope["user"]))
        return [html for html in parts if html]
