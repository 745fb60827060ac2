"""Access: who may do what, for whom (seed 002 DAC→MAC→ABAC, seed 003 ACL, seed 004 capability
requests).

The principal behind an inbound message and its ACL decision (``acl``), sharing of another agent's
data (``sharing``), temporary grants (``grants``), standing approvals (``standing``) and the
agents' credentials (``credentials``).
"""
