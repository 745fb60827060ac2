"""The agent service (seed 004 agent container, seed 000 §3 the agent's dashboard, seed 003
personas): how an agent runs in its VM.

``config`` reads the TOML file and secrets, ``supervisor`` runs the loop worker and serves the
control API, ``dashboard`` the agent's read-only page, ``personas`` who answers as whom, ``cli``
one signed request from a shell.
"""
