"""ASGI entry point (daphne): HTTP through Django's synchronous path (rabs.http), the board's
websockets through Channels."""

from __future__ import annotations

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")
django.setup(set_prefix=False)

# Imported after the app registry is ready.
from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from dashboard.routing import websocket_urlpatterns  # noqa: E402
from rabs.http import SyncASGIHandler, http_threads  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": SyncASGIHandler(threads=http_threads()),
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
