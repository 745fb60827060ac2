"""The rules staff write and the broker applies (seed 000 §14 prime directives; seed 001
constitutional rules; seed 002 V-Pol and DAC→MAC→ABAC; seed 004 caps).

``conditions`` is the condition language (grammar, evaluation, sequence rules), ``acl`` the ACL
policies over it, ``caps`` the agents' three-axis caps, ``baseline`` the prime directives,
constitution and system tools every install starts with (``channel_tools`` among them).
"""
