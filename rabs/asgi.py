"""ASGI entry point (daphne): HTTP through Django's synchronous path (rabs.web.http), the MCP face
at /mcp through the official SDK's transport (broker.mcp.gateway), the A2A face (agent cards and
/a2a, broker.a2a.gateway), the model gateway at /llm/v1 (broker.llm.gateway), the board's
websockets through Channels. The lifespan, when a server sends one, starts the MCP session
manager; under daphne, which sends none, the first MCP request starts it."""

from __future__ import annotations

import gc
import os
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")
django.setup(set_prefix=False)

# Imported after the app registry is ready.
from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from brainframe.safety.guardian import domain  # noqa: E402
from brainframe.safety.guardian.learned import detector  # noqa: E402
from broker.a2a.gateway import A2AGateway, serves  # noqa: E402
from broker.llm.gateway import LLMGateway  # noqa: E402
from broker.llm.gateway import serves as llm_serves  # noqa: E402
from broker.mcp.gateway import MCP_PATH, MCPGateway  # noqa: E402
from dashboard.routing import websocket_urlpatterns  # noqa: E402
from rabs.web.http import SyncASGIHandler, form_parsing_off, http_threads  # noqa: E402
from rabs.web.schema import schema_extensions_resolve  # noqa: E402

form_parsing_off()  # daphne's Twisted requests leave POST bodies to the app (rabs.web.http)
router = ProtocolTypeRouter(
    {
        "http": SyncASGIHandler(threads=http_threads()),
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
mcp = MCPGateway()
a2a = A2AGateway()
llm = LLMGateway()

# drf-spectacular resolves each schema extension's target class on first use, without a lock:
# two requests generating the schema at once in a fresh process (a readiness probe that timed
# out and asked again) could see one half-resolved and answer 500. Resolved here, before any.
schema_extensions_resolve()

# The Guardian's learned and domain models are read now rather than on the first untrusted text
# a request brings (about 0.2 s each), and so are frozen with the rest.
detector()
domain.detector()

# What is loaded by now (code, settings, registries) lives as long as the process: out of the
# cyclic collector's way, so its full collections walk only what requests leave behind.
gc.collect()
gc.freeze()


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await mcp.lifespan(scope, receive, send)
    elif scope["type"] == "http" and scope["path"].rstrip("/") == MCP_PATH:
        await mcp(scope, receive, send)
    elif scope["type"] == "http" and serves(scope["path"]):
        await a2a(scope, receive, send)
    elif scope["type"] == "http" and llm_serves(scope["path"]):
        await llm(scope, receive, send)
    else:
        await router(scope, receive, send)
