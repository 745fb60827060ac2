"""RABS Brainframe: the control plane that lets a business run LLM agents safely."""

from __future__ import annotations

from .celery import app as celery_app

__all__ = ["celery_app"]
