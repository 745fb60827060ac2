from __future__ import annotations

from django.urls import path

from dashboard.live.consumers import BoardConsumer

websocket_urlpatterns = [path("ws/board/", BoardConsumer.as_asgi())]
