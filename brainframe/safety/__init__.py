"""Safety: text in, verdict out, with no model or request of its own (seed 001 Guardian and
constitution, seed 000 §14 prime directives; docs/safety.md).

The Guardian's threat assessment (``guardian``), the PII filter (``pii``), the condition language
with the ACL, caps and the governance baseline it serves (``policy``); ``fastre`` runs their
regular expressions on Hyperscan.
"""
