from __future__ import annotations

from django.apps import AppConfig


class BrokerConfig(AppConfig):
    """The Tools Broker: the agent API and the decision pipeline."""

    name = "broker"
    verbose_name = "Tools Broker"

    def ready(self) -> None:
        from .api import schema  # noqa: F401  (registers the RABS-HMAC OpenAPI extension)
