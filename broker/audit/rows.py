"""A decision's rows built without model instances' construction (the hot path builds several
per call): ``Table`` by column from the model's defaults, and the origin a call registers."""

from __future__ import annotations

from functools import cache
from typing import Any

from django.db import models
from django.db.models import signals
from django.db.models.base import ModelState

from brainframe.models import OriginRegistry, ReasonEdge, ReasonLog, ToolCall


class Table:
    """Building one table's row without a model instance's construction (the decision's hot
    path builds several per call): the model's defaults, then the given values, by column."""

    def __init__(self, model: type[models.Model]) -> None:
        fields = model._meta.concrete_fields
        blank = model()
        self.model = model
        self.defaults = {f.attname: getattr(blank, f.attname) for f in fields}
        # Defaults made anew for each row (a new uuid, a new dict): never shared.
        self.made = [(f.attname, f) for f in fields if callable(f.default)]
        self.attnames = [f.attname for f in fields]
        self.columns = [(f.attname, f.column) for f in fields]
        self.stamped = [
            f.attname
            for f in fields
            if getattr(f, "auto_now_add", False) or getattr(f, "auto_now", False)
        ]
        # Nothing may watch an instance being made: ``new`` and ``instance`` skip __init__.
        assert not signals.pre_init.has_listeners(model), model
        assert not signals.post_init.has_listeners(model), model

    def new(self, given: dict[str, Any], related: dict[str, models.Model]) -> Any:
        """An unsaved instance, as ``model(**given, **related)`` makes it (without its
        ``__init__``: a quarter of a decision's preparation): ``given`` by attname,
        ``related`` the objects behind foreign keys (by field name)."""
        values = {**self.defaults, **given}
        for attname, field in self.made:
            if attname not in given:
                values[attname] = field.get_default()
        instance = self._bare(values)
        for name, obj in related.items():
            instance._state.fields_cache[name] = obj
        return instance

    def values(self, given: dict[str, Any], now: Any) -> dict[str, Any]:
        merged = {**self.defaults, **given}
        for attname in self.stamped:
            merged[attname] = now
        return merged

    def row(self, values: dict[str, Any]) -> dict[str, Any]:
        """By column, as jsonb_populate_record reads it."""
        return {column: values[attname] for attname, column in self.columns}

    def instance(self, values: dict[str, Any]) -> Any:
        """The saved instance, as ``Model.from_db`` makes it (without its ``__init__``)."""
        instance = self._bare({a: values[a] for a in self.attnames})
        instance._state.adding, instance._state.db = False, "default"
        return instance

    def _bare(self, values: dict[str, Any]) -> Any:
        """An instance holding ``values`` (by attname), made without ``__init__``."""
        instance = self.model.__new__(self.model)
        instance.__dict__.update(values)
        instance._state = ModelState()
        return instance


@cache
def tables() -> tuple[Table, Table, Table]:
    return Table(ReasonLog), Table(ReasonEdge), Table(ToolCall)


@cache
def _origins() -> Table:
    return Table(OriginRegistry)


def origin_new(
    *, agent: Any, origin_type: str, source_ref: str, metadata: dict[str, Any]
) -> OriginRegistry:
    """An origin the call registers with its decision (``record_decision`` writes it)."""
    origin: OriginRegistry = _origins().new(
        {
            "origin_type": origin_type,
            "source_ref": source_ref,
            "metadata": metadata,
            "registered_by_id": agent.pk,
        },
        {"registered_by": agent},
    )
    return origin
