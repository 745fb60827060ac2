"""The board's websocket: refuses anonymous sockets, pushes rendered partials for events."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from broker.events import publish_tool_call
from dashboard.routing import websocket_urlpatterns
from tests import factories as f

application = URLRouter(websocket_urlpatterns)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_anonymous_socket_is_refused() -> None:
    communicator = WebsocketCommunicator(application, "/ws/board/")
    communicator.scope["user"] = AnonymousUser()
    connected, code = await communicator.connect()
    assert not connected and code == 4401


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_tool_call_event_pushes_a_log_row() -> None:
    user = await sync_to_async(f.UserFactory)(username="watcher")
    communicator = WebsocketCommunicator(application, "/ws/board/")
    communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    call = await sync_to_async(f.ToolCallFactory)(
        requested_tool_id="roster.shift.read", outcome="succeeded", duration_ms=7
    )
    await sync_to_async(publish_tool_call)(call)
    html = await communicator.receive_from(timeout=5)
    assert 'hx-swap-oob="afterbegin:#action-log"' in html
    assert "roster.shift.read" in html and "OK" in html and "(7ms)" in html
    await communicator.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_events_the_board_does_not_show_send_nothing() -> None:
    from broker.events import publish

    user = await sync_to_async(f.UserFactory)(username="watcher")
    communicator = WebsocketCommunicator(application, "/ws/board/")
    communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    await sync_to_async(lambda: publish("guardian:assessment_complete", {"risk": 0.0}).result())()
    call = await sync_to_async(f.ToolCallFactory)(requested_tool_id="roster.shift.read")
    await sync_to_async(publish_tool_call)(call)
    html = await communicator.receive_from(timeout=5)  # the first thing sent is the call's row
    assert "roster.shift.read" in html
    assert await communicator.receive_nothing(timeout=0.2)
    await communicator.disconnect()
