"""What the board reads and draws (seed 000 §12 admin dashboard): ``selectors`` reads what the
pages show in as few queries as possible, ``action_log`` the action log's rows, ``metrics`` the
reviewers' service levels and the broker's counters (``/metrics``), ``charts`` small server-side
SVG charts (no script, no CDN).
"""
