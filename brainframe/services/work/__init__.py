"""Work: an agent's inbox, delegation between managers and workers, deliverables, supervisors
(seeds 000 §3, 003, 004).

Tasks on the Kanban (``tasks``), ``agents.delegate`` (``delegation``), files in an agent's outbox
(``deliverables``) and the agents' supervisors (``supervisors``).
"""
