"""The servers the control plane runs on, and starting them (seed 000 §3 network architecture;
seed 002 read replica): embedded PostgreSQL and Redis where none is configured (``embedded``), Super
Reggie's streaming standby (``replica``), the Matrix homeserver for chat (``matrix``), ``make
run``'s whole stack in one terminal (``devstack``), child processes that end with their parent
(``procs``) and one Redis URL spelt for each client (``redis_urls``).
"""
