"""A lean HTTP/1.1 load generator for the benchmarks that share two cores with the stack.

httpx cost 2.5–2.8 ms of CPU per request here, as much as half of what the stack spends on a
decision, and it ran on the same two cores. This client keeps one connection per concurrent
client and writes requests built and signed beforehand (each with its own nonce; the broker
still verifies every signature and refuses a nonce it has seen), then reads the status line,
the headers and a Content-Length or chunked body. No pooling, redirects or TLS.
"""

from __future__ import annotations

import asyncio
import secrets as tokens
import time
from collections.abc import Iterator
from typing import NamedTuple
from urllib.parse import urlsplit

from bench.common.stack import PAYLOAD

CALLS_PATH = "/api/v1/tool-calls/"


def _request(host: str, path: str, body: bytes, headers: dict[str, str]) -> bytes:
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def signed_calls(url: str, secrets: dict[str, str], count: int) -> Iterator[bytes]:
    """``count`` signed ``POST /api/v1/tool-calls/`` requests, the agents of ``secrets`` in
    turn, each with a fresh nonce (valid for the signature window: use them within minutes)."""
    from agents_vm.client.signing import sign

    host = urlsplit(url).netloc
    agents = list(secrets)
    ts = str(int(time.time()))
    for n in range(count):
        agent = agents[n % len(agents)]
        nonce = tokens.token_hex(16)
        sig = sign(secrets[agent].encode(), "POST", CALLS_PATH, ts, nonce, PAYLOAD)
        auth = f"RABS-HMAC agent={agent},ts={ts},nonce={nonce},sig={sig}"
        yield _request(
            host, CALLS_PATH, PAYLOAD, {"Authorization": auth, "Content-Type": "application/json"}
        )


def bare_requests(url: str, count: int) -> Iterator[bytes]:
    raw = _request(urlsplit(url).netloc, "/bench/insert/", b"", {})
    return (raw for _ in range(count))


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, url: str) -> Connection:
        parts = urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        return cls(reader, writer)

    async def send(self, raw: bytes) -> tuple[int, bytes]:
        """One request on this connection: (status, body)."""
        self.writer.write(raw)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length, chunked = 0, False
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
        if not chunked:
            return status, await self.reader.readexactly(length)
        body = b""
        while size := int((await self.reader.readuntil(b"\r\n")).strip(), 16):
            body += await self.reader.readexactly(size + 2)
            body = body[:-2]
        await self.reader.readuntil(b"\r\n")
        return status, body

    def close(self) -> None:
        self.writer.close()


async def closed_loop(url: str, requests: list[bytes], *, clients: int, seconds: float) -> dict:
    """``clients`` connections, each sending the next request as soon as its last is answered,
    for ``seconds``. Returns answers/s, status counts and transport errors."""
    pending = iter(requests)
    codes: dict[int, int] = {}
    errors = 0
    stop = time.monotonic() + seconds

    async def client() -> None:
        nonlocal errors
        connection = await Connection.open(url)
        try:
            while time.monotonic() < stop and (raw := next(pending, None)) is not None:
                try:
                    status, _ = await connection.send(raw)
                except (OSError, asyncio.IncompleteReadError, ValueError):
                    errors += 1
                    connection.close()
                    connection = await Connection.open(url)
                    continue
                codes[status] = codes.get(status, 0) + 1
        finally:
            connection.close()

    started = time.monotonic()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.monotonic() - started
    if next(pending, None) is None:
        raise RuntimeError("the prepared requests ran out before the time was up: prepare more")
    total = sum(codes.values()) + errors
    return {
        "per_second": codes.get(200, 0) / elapsed,
        "codes": codes,
        "transport_errors": errors,
        "5xx_share": sum(v for k, v in codes.items() if k >= 500) / max(1, total),
    }


class Answer(NamedTuple):
    status: int  # 0: a transport error
    ms: float  # from the scheduled send to the answer
    sent_ms: float  # the scheduled send, epoch milliseconds
    body: bytes


async def open_loop(url: str, requests: list[bytes], *, rate: float) -> list[Answer]:
    """Each request sent at its scheduled time (``rate`` per second) whatever the others do,
    on an idle connection or a new one. Returns each one's ``Answer``, in the order answered."""
    idle: list[Connection] = []
    results: list[Answer] = []
    epoch_ms = (time.time() - time.monotonic()) * 1000

    async def one(raw: bytes, at: float) -> None:
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        sent_ms = epoch_ms + at * 1000
        connection = idle.pop() if idle else await Connection.open(url)
        try:
            status, body = await connection.send(raw)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            connection.close()
            results.append(Answer(0, (time.monotonic() - at) * 1000, sent_ms, b""))
            return
        results.append(Answer(status, (time.monotonic() - at) * 1000, sent_ms, body))
        idle.append(connection)

    start = time.monotonic() + 0.5
    await asyncio.gather(*(one(raw, start + n / rate) for n, raw in enumerate(requests)))
    for connection in idle:
        connection.close()
    return results
