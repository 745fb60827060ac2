"""What the model is told and what it gives back (seed 002 model roles and plan-driven constraint
injection; seed 001 Planner).

``prompting`` offers the broker's tools as function tools, ``prose`` puts tools, outcomes and
plans into words for the Dreamer, ``roles`` is the Dreamer and the Actuator, ``constraints`` the
rules that govern a plan's current step, ``plan`` a goal and steps that must form a DAG.
"""
