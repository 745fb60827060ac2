"""Model instances on the hot path."""

from __future__ import annotations

import copy
from typing import TypeVar

from django.db import models

M = TypeVar("M", bound=models.Model)


def model_copy(instance: M) -> M:
    """A shallow copy of a model instance, as ``copy.copy`` makes it (its own ``_state`` and
    related-object cache), without the pickling protocol's detour (a third of the time)."""
    new = instance.__class__.__new__(instance.__class__)
    new.__dict__ = instance.__dict__.copy()
    state = new._state = copy.copy(instance._state)
    state.fields_cache = instance._state.fields_cache.copy()
    return new
