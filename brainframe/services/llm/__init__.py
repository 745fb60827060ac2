"""The model gateway (seed 002 model router, budgets, semantic cache): keys, upstreams, budgets,
records.

Admission of a request — key, model, budget (``admission``), its record and cost (``records``),
what leaves for an external model (``outbound``), the optional cache (``cache``) and usage of the
native helpers (``usage``).
"""
