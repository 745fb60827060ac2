"""Trust over time (seed 000 §9; seed 002 flywheel): alignment, the nightly job, proposed
rules, trajectories.

Alignment ratings, scores, graduation and demotion (``alignment``), the nightly trust job
(``nightly``), rules proposed from reviewers' decisions (``proposals``) and finished tasks as
training examples (``trajectories``).
"""
