"""The web process's own parts (seed 000 §12 admin dashboard): Django's request path under daphne
(``http``, ``middleware``), sign-in for people (``signin``), ``/healthz`` (``health``), the
admin's index by concept (``admin_site``), the API schema's extensions (``schema``), the cache
backend (``cache``) and the bare endpoint the load benchmark compares with (``bench_views``).
"""
