"""drf-spectacular's schema extensions, resolved once per process (``rabs.asgi``)."""

from __future__ import annotations

import drf_spectacular.openapi  # noqa: F401  (registers the contrib extensions)
from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiFilterExtension,
    OpenApiSerializerExtension,
    OpenApiSerializerFieldExtension,
    OpenApiViewExtension,
)

EXTENSION_KINDS = (
    OpenApiAuthenticationExtension,
    OpenApiFilterExtension,
    OpenApiSerializerExtension,
    OpenApiSerializerFieldExtension,
    OpenApiViewExtension,
)


def schema_extensions_resolve() -> None:
    """Import every registered extension's target class now (one for a package that is not
    installed resolves to nothing), as the first schema request would: that request's thread
    and another's must not both be doing it."""
    for kind in EXTENSION_KINDS:
        for extension in kind._registry:
            extension._matches(object)
