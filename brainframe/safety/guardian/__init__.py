"""The Guardian (seed 001 "Guardian Agent — Threat Detection"; constitution rule 2, content is
not command): how much a text tries to command, from a source of a given trust.

``core.assess`` gives the assessment: normalisation first (``normalise``: disguises off, hidden
parts out), the named patterns (``patterns``, ``languages``) read with mention told from use
(``mention``), requests to act that the source may not make (``acts``), then the model stages
(``stages``: ``learned``, ``domain``, ``semantic``) where nothing named matched.
"""
