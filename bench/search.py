"""Benchmark: semantic top-10 over N × 768-d vectors (default 1,000,000) with HNSW cosine.

    .venv/bin/python bench/search.py [--rows 1000000] [--queries 200] [--ef 40,100,200]
                                     [--warmup 1000] [--drop]

Builds ``bench_search_vectors`` (same column type and HNSW parameters as ``context_buckets``:
vector(768), m=16, ef_construction=64, vector_cosine_ops) once and keeps it for later runs;
``--drop`` removes it. Vectors are unit length and clustered (1,000 topics plus noise), written
with binary COPY. Prints the setup times, the query latency p50/p99 at each ``hnsw.ef_search``,
recall@10 against an exact scan for a sample of queries, and the local model's time to embed
one query (the other half of a search).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")

TABLE = "bench_search_vectors"
DIMS = 768


def _unit(a: np.ndarray) -> np.ndarray:
    return (a / np.linalg.norm(a, axis=1, keepdims=True)).astype(np.float32)


def _vectors(rng: np.random.Generator, centres: np.ndarray, n: int) -> np.ndarray:
    picks = rng.integers(0, len(centres), n)
    return _unit(centres[picks] + rng.normal(0, 0.7 / np.sqrt(DIMS), (n, DIMS)))


def main() -> int:
    import django

    django.setup()
    from django.db import connection
    from pgvector.psycopg import register_vector

    from bench.common.stack import percentile

    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ef", default="40,100,200")
    parser.add_argument("--recall-sample", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--drop", action="store_true")
    args = parser.parse_args()

    connection.ensure_connection()
    raw = connection.connection
    raw.autocommit = True
    raw.execute("CREATE EXTENSION IF NOT EXISTS vector")
    register_vector(raw)
    with raw.cursor() as cursor:
        if args.drop:
            cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")
            print(f"dropped {TABLE}")
            return 0
        rng = np.random.default_rng(42)
        centres = _unit(rng.normal(size=(1000, DIMS)))
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [TABLE])
        exists = cursor.fetchone()[0]
        if exists:
            cursor.execute(f"SELECT count(*) FROM {TABLE}")
            have = cursor.fetchone()[0]
            if have != args.rows:
                print(f"{TABLE} has {have:,} rows, not {args.rows:,}: rebuilding")
                cursor.execute(f"DROP TABLE {TABLE}")
                exists = False
        if not exists:
            cursor.execute(f"CREATE TABLE {TABLE} (id bigint PRIMARY KEY, vector vector({DIMS}))")
            started = time.perf_counter()
            with cursor.copy(f"COPY {TABLE} (id, vector) FROM STDIN WITH (FORMAT BINARY)") as copy:
                copy.set_types(["int8", "vector"])
                done = 0
                while done < args.rows:
                    n = min(20_000, args.rows - done)
                    for i, vector in enumerate(_vectors(rng, centres, n)):
                        copy.write_row((done + i, vector))
                    done += n
            print(f"copied {args.rows:,} vectors in {time.perf_counter() - started:.1f} s")
            started = time.perf_counter()
            cursor.execute("SET maintenance_work_mem = '8GB'")
            cursor.execute("SET max_parallel_maintenance_workers = 2")
            cursor.execute(
                f"CREATE INDEX {TABLE}_hnsw ON {TABLE} USING hnsw (vector vector_cosine_ops) "
                "WITH (m = 16, ef_construction = 64)"
            )
            cursor.execute(f"ANALYZE {TABLE}")
            print(f"built the HNSW index in {time.perf_counter() - started:.1f} s")
        else:
            print(f"reusing {TABLE} ({args.rows:,} vectors, HNSW index)")

        queries = _vectors(np.random.default_rng(7), centres, args.queries)
        sql = f"SELECT id FROM {TABLE} ORDER BY vector <=> %s LIMIT 10"
        # Steady state: the index (about 4 GB at 1M rows) is read through the OS page cache
        # (shared_buffers is 128 MB on the embedded server); warm it with other queries first.
        started = time.perf_counter()
        cursor.execute(f"SET hnsw.ef_search = {max(int(x) for x in args.ef.split(','))}")
        for q in _vectors(np.random.default_rng(99), centres, args.warmup):
            cursor.execute(sql, [q])
        print(f"warm-up: {args.warmup} queries in {time.perf_counter() - started:.1f} s")
        for ef in [int(x) for x in args.ef.split(",")]:
            cursor.execute(f"SET hnsw.ef_search = {ef}")
            for q in queries[:10]:
                cursor.execute(sql, [q])
            times = []
            for q in queries:
                started = time.perf_counter()
                cursor.execute(sql, [q])
                cursor.fetchall()
                times.append((time.perf_counter() - started) * 1000)
            recalls = []
            for q in queries[: args.recall_sample]:
                cursor.execute(sql, [q])
                approx = {r[0] for r in cursor.fetchall()}
                cursor.execute("SET enable_indexscan = off")
                cursor.execute(sql, [q])
                exact = {r[0] for r in cursor.fetchall()}
                cursor.execute("SET enable_indexscan = on")
                recalls.append(len(approx & exact) / 10)
            print(
                f"top-10, ef_search={ef}: p50 {statistics.median(times):.2f} ms, "
                f"p99 {percentile(times, 99):.2f} ms over {len(times)} queries; "
                f"recall@10 {statistics.mean(recalls):.3f} ({len(recalls)} queries vs exact scan)"
            )

    from brainframe.embeddings.indexer import get_indexer

    indexer = get_indexer()
    indexer.embed(["warm-up"])
    times = []
    for i in range(50):
        started = time.perf_counter()
        indexer.embed([f"which van has a broken wheelchair ramp {i}"])
        times.append((time.perf_counter() - started) * 1000)
    print(
        f"embedding one query ({indexer.name}): p50 {statistics.median(times):.1f} ms, "
        f"p99 {percentile(times, 99):.1f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
