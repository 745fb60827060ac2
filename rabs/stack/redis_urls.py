"""One Redis URL in, the spelling each client wants out.

redis-py (cache, channels) takes ``unix:///path`` for a socket; kombu (Celery) wants
``redis+socket:///path``. TCP URLs are the same for all.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class RedisURLs:
    cache: str
    channels: str
    celery: str


def redis_urls(url: str) -> RedisURLs:
    parts = urlsplit(url)
    if parts.scheme in ("unix", "redis+socket"):
        query = f"?{parts.query}" if parts.query else ""
        redis_py = f"unix://{parts.path}{query}"
        kombu = f"redis+socket://{parts.path}{query}"
        return RedisURLs(cache=redis_py, channels=redis_py, celery=kombu)
    if parts.scheme not in ("redis", "rediss"):
        raise ValueError(f"REDIS_URL must be redis://, rediss:// or unix://, not {url!r}")
    return RedisURLs(cache=url, channels=url, celery=url)
