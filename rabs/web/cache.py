"""The cache backend: Django's Redis cache with one long-lived client per connection pool.

Django's ``RedisCache`` builds a new ``redis.Redis`` object for every operation, and redis-py
copies its table of response callbacks into each new client, which costs more than the round
trip itself on the agent API's hot path (replay guard, rate limit). A client is thread-safe and
only borrows connections from the pool, so one per pool serves every thread of the process.
"""

from __future__ import annotations

from typing import Any

import redis
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient as DjangoRedisCacheClient


class RedisCacheClient(DjangoRedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, redis.Redis] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> redis.Redis:
        pool = self._get_connection_pool(write)  # type: ignore[attr-defined]
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)  # type: ignore[attr-defined]
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = RedisCacheClient

    def redis(self) -> redis.Redis:
        """The Redis client behind the cache, for atomic operations the cache API lacks."""
        client: redis.Redis = self._cache.get_client(write=True)  # type: ignore[attr-defined]
        return client
