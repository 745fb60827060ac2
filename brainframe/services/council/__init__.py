"""The council (seed 001 Governor): constitutional changes are voted, not clicked.

Proposals and votes (``votes``) and what each kind of proposal changes, checked when it opens and
when it is applied (``changes``).
"""
