"""The event log (seed 002 event sourcing): reading and verifying it, materialised views, SIEM
sinks.

Writing is ``brainframe.events.emit``. Here: verification and the board's feed (``reading``),
materialised views rebuilt by replay (``views``) and the sinks that send events to other systems
(``sinks``).
"""
