"""Hooks (seed 004): rules agents propose and staff approve, run on the event log and the minute
timer.

Proposing, reviewing, enabling and disabling hooks (``lifecycle``), checking a definition
(``checks``) and running them (``runner``).
"""
