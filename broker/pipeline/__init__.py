"""The decision pipeline: ordered stages over one call context (ARCHITECTURE.md).

``prepare`` loads what the stages need (one place for I/O); each stage is a small pure function
that passes (returns None) or returns a ``Verdict`` with a machine-readable code; the gate always
decides. ``broker.services.calls`` runs the whole thing, writes the audit and executes.
"""
