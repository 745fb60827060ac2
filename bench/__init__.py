"""Benchmarks and drills: commands that print figures (see the README)."""
