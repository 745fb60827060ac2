"""The live board (seed 000 §12 admin dashboard, §13 approval queue): what reaches a reviewer's
page as it happens. ``consumers`` is the board's websocket, ``render`` turns each board event into
the partials to push (HTMX out-of-band swaps), ``cards`` an approval card's context, the same for a
page, an answer to a decision and a pushed update.
"""
