"""Memory (seed 000 §5–6, seed 001 learning cards, seed 002 discovery): observations, relevance,
search, context.

Observations in the context buckets (``observations``), relevance and decay (``relevance``),
semantic search (``search``) and the embedding queue (``indexing``), the bucket checker
(``bucket_checker``), what an agent loads at the start of a task (``context``), discovery of tools
and plans (``discovery``) and learning cards (``cards``).
"""
