"""What the benchmarks share: the served stack on a throwaway database (``stack``, ``db``), load
generators over HTTP (``http``), CPU per request from ``/proc`` (``cpu``) and the drills' parts
(``drill_parts``). Each benchmark is one script in ``bench/``, with its section in
docs/performance.md."""
