"""Local embedder benchmark: load time, query latency, document throughput.

Run from the repo root: ``python bench/embedders.py`` (``--quick`` for a smoke run).
Measures the real async path (LocalEmbedder: a thread hop per call), not the bare engine.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import anyio

from mcp_gateway.embedders import LocalEmbedder

QUERY_TEMPLATES = [
    "how do I deploy {} to production",
    "why did the {} migration fail",
    "{} のデプロイ手順",
    "{} のテストが失敗した原因",
    "วิธีดีพลอย {} ขึ้นเซิร์ฟเวอร์",
    "ทำไม {} ถึงช้า",
]
TOPICS = ["the api", "redis", "qdrant", "the worker", "postgres", "nginx", "the cli", "auth"]

NOTE_TEMPLATES = [
    "Lesson: when deploying {t}, run the migrations before restarting the workers, otherwise "
    "the old workers pick up jobs with the new schema and fail. Checked on staging first.",
    "{t} の設定を変更したら、必ずステージングで確認してから本番にデプロイすること。"
    "前回はタイムアウト値の単位を間違えて障害になった。ログは journalctl で確認できる。",
    "บันทึก: การตั้งค่า {t} ต้องตรวจสอบบนสเตจจิงก่อนดีพลอยขึ้นโปรดักชันเสมอ "
    "ครั้งก่อนค่าไทม์เอาต์ผิดหน่วยทำให้ระบบล่ม ดูล็อกได้ด้วย journalctl",
]


def percentile(samples: list[float], pct: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


async def main(quick: bool) -> None:
    n_queries = 40 if quick else 200
    n_docs = 32 if quick else 128
    print(f"machine: {os.cpu_count()} cpus, python {platform.python_version()}")

    began = time.perf_counter()
    emb = LocalEmbedder()
    await emb.start()
    print(f"model {emb.model_id} dim {emb.dim}: load {1e3 * (time.perf_counter() - began):.1f} ms")

    await emb.embed_query("warm up")
    queries = [
        QUERY_TEMPLATES[i % len(QUERY_TEMPLATES)].format(f"{TOPICS[i % len(TOPICS)]} {i}")
        for i in range(n_queries)
    ]
    latencies = []
    for q in queries:
        t0 = time.perf_counter()
        await emb.embed_query(q)
        latencies.append(1e3 * (time.perf_counter() - t0))
    print(
        f"query latency over {n_queries} (en/ja/th): p50 {percentile(latencies, 50):.1f} ms, "
        f"p95 {percentile(latencies, 95):.1f} ms, p99 {percentile(latencies, 99):.1f} ms, "
        f"mean {statistics.fmean(latencies):.1f} ms"
    )

    docs = [
        NOTE_TEMPLATES[i % len(NOTE_TEMPLATES)].format(t=f"{TOPICS[i % len(TOPICS)]}-{i}")
        for i in range(n_docs)
    ]
    avg_chars = statistics.fmean(len(d) for d in docs)
    for batch in (1, 8, 32, 64):
        t0 = time.perf_counter()
        for i in range(0, n_docs, batch):
            await emb.embed_documents(docs[i : i + batch])
        rate = n_docs / (time.perf_counter() - t0)
        print(f"documents batch {batch:>2}: {rate:6.1f} texts/s (~{avg_chars:.0f} chars each)")

    # Queries use their own lane: they share the cores with a document batch, not wait for it.
    long_doc = "The deployment pipeline builds the image and restarts the service. " * 480
    during: list[float] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(emb.embed_documents, [long_doc])
        await anyio.sleep(0.2)
        for q in queries[:20]:
            t0 = time.perf_counter()
            await emb.embed_query(q)
            during.append(1e3 * (time.perf_counter() - t0))
    print(
        f"query latency while a {len(long_doc.encode()) // 1024} KB note embeds: "
        f"p50 {percentile(during, 50):.1f} ms, max {max(during):.1f} ms"
    )
    t0 = time.perf_counter()
    await emb.embed_documents([long_doc])
    print(f"one {len(long_doc.encode()) // 1024} KB note alone: {time.perf_counter() - t0:.1f} s")
    await emb.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer samples, for a smoke run")
    anyio.run(main, parser.parse_args().quick)
