"""Describes RABS-HMAC in the OpenAPI schema."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class AgentSignatureScheme(OpenApiAuthenticationExtension):
    target_class = "broker.api.authentication.AgentSignatureAuthentication"
    name = "RABS-HMAC"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": (
                "RABS-HMAC agent=<agent_id>,ts=<unix seconds>,nonce=<hex>,sig=<hex>; sig is hex "
                "HMAC-SHA256 under the agent's secret of METHOD\\npath_with_query\\nts\\nnonce\\n"
                "sha256_hex(body)."
            ),
        }
