"""The PII filter (seed 000 §14, layer 4 "Outbound PII Filter", directive PRIVACY_NO_PII): what
in a text is a person's detail, and the text with it redacted.

``filter`` finds and redacts (spaCy's small model and the rules), ``rules`` holds the patterns
(phone, Medicare, NDIS, TFN…), ``names`` the known-names list and the name heuristics, ``keep``
what must survive (public service numbers, helplines, doses).
"""
