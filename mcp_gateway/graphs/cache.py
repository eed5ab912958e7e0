"""The ONNX graphs of ours (the e5 engine's, MiniLM's), built once and kept on disk.

Building a graph dequantises and re-packs every weight of the model: ~0.6 s, and
~150 MB of temporaries that the allocator keeps for the rest of the process's life
(measured: a process that built the three graphs held 255 MB more than one that loaded
its sessions from files). So each graph is built once, in a child process, and written
to the user's cache; every process then loads its sessions from the file and never
holds a graph's bytes.

A graph's file name carries a digest of everything that shapes it: its kind, each input
file's path, size and modification time (the model, the int8 calibration, the
autoencoder) and the source of the modules that build it. A new kioku or a new model
package therefore builds new files. Each load marks its file as used (its modification
time), and a build removes the files of its kind unused for ``STALE_DAYS``: an upgrade's
old graphs (MiniLM's is 55 MB) do not pile up, and a second install sharing the cache
keeps its own while it runs. Arrays a load would otherwise compute at every start (e5's
piece index, ``e5_pieces.cached``) are kept beside the graphs the same way
(``cached_arrays``, ``keep_arrays``: ``.npz``, keyed by their inputs and the code that
computes them). The cache is ``$XDG_CACHE_HOME/kioku/graphs``
(``~/.cache/kioku/graphs``), private to the user (0700, files 0600), and safe to delete
at any time.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import platformdirs

from mcp_gateway.common.fsperms import write_atomic

log = logging.getLogger(__name__)

KINDS = ("exact", "int8", "sae", "minilm", "minilm_int8")
BUILD_TIMEOUT_S = 600.0
STALE_DAYS = 30


def cache_dir() -> Path:
    return platformdirs.user_cache_path("kioku") / "graphs"


def _shaping_sources() -> list[Path]:
    """The modules whose code decides a graph's bytes."""
    from mcp_gateway.graphs import e5_file, e5_graph, e5_int8, e5_latent, onnx_proto

    return [Path(m.__file__ or "") for m in (e5_file, e5_graph, e5_int8, e5_latent, onnx_proto)]


def _minilm_sources() -> list[Path]:
    from mcp_gateway.graphs import minilm_graph, onnx_proto, onnx_read

    return [Path(m.__file__ or "") for m in (minilm_graph, onnx_proto, onnx_read)]


def digest(kind: str, inputs: Sequence[Path]) -> str:
    h = hashlib.sha256(kind.encode())
    for path in inputs:
        st = path.stat()
        h.update(f"\0{path.resolve()}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    for source in _minilm_sources() if kind.startswith("minilm") else _shaping_sources():
        h.update(source.read_bytes())
    return h.hexdigest()[:20]


def build(kind: str, inputs: Sequence[Path]) -> bytes:
    """The graph's bytes: ``exact`` (model), ``int8`` (model, calibration), ``sae``
    (autoencoder), ``minilm`` and ``minilm_int8`` (the packaged MiniLM model)."""
    from mcp_gateway.graphs import e5_file, e5_graph, e5_int8, e5_latent, minilm_graph

    if kind.startswith("minilm"):
        block = minilm_graph.KERNEL_BLOCK if kind == "minilm_int8" else 0
        return minilm_graph.build(minilm_graph.load(inputs[0]), block)
    if kind == "sae":
        return e5_latent.build(e5_latent.load(inputs[0]))
    model = e5_file.load(inputs[0])
    if kind == "exact":
        return e5_graph.build(model)
    if kind == "int8":
        stats = e5_int8.load_stats(inputs[1], model)
        if stats is None:
            raise ValueError(f"no int8 calibration in {inputs[1]}")
        return e5_graph.build(model, int8=stats)
    raise ValueError(f"unknown graph kind {kind!r} (expected one of {KINDS})")


def graph_source(kind: str, inputs: Sequence[Path]) -> str | bytes:
    """What an ONNX session loads: the cached file's path, or, where the cache cannot be
    written (a read-only home), the graph's bytes built here."""
    try:
        return str(graph_file(kind, inputs))
    except OSError as exc:
        log.warning("no graph cache (%s): building the %s graph in this process", exc, kind)
        return build(kind, inputs)


def graph_file(kind: str, inputs: Sequence[Path]) -> Path:
    """The graph's file, built first (in a child process) if the cache lacks it."""
    path = cache_dir() / f"{kind}-{digest(kind, inputs)}.onnx"
    if path.exists():
        os.utime(path)  # in use: a build of another version keeps it
        return path
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    for stale in remove_stale(kind, keep=path):
        log.info("removed %s from the graph cache (unused for %d days)", stale.name, STALE_DAYS)
    child = "mcp_gateway.graphs.build_child"
    argv = [sys.executable, "-m", child, kind, *map(str, inputs), "--out", str(path)]
    try:
        subprocess.run(
            argv, check=True, timeout=BUILD_TIMEOUT_S, stdin=subprocess.DEVNULL, stdout=sys.stderr
        )
    except (OSError, subprocess.SubprocessError) as exc:
        # still correct, only heavier: the temporaries stay with this process
        log.warning("building the %s graph in a child failed (%s); building it here", kind, exc)
        write_atomic(path, build(kind, inputs))
    return path


def _arrays_path(kind: str, inputs: Sequence[Path], sources: Sequence[Path]) -> Path:
    h = hashlib.sha256(kind.encode())
    for path in inputs:
        st = path.stat()
        h.update(f"\0{path.resolve()}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    for source in sources:
        h.update(source.read_bytes())
    return cache_dir() / f"{kind}-{h.hexdigest()[:20]}.npz"


def cached_arrays(
    kind: str, inputs: Sequence[Path], sources: Sequence[Path]
) -> dict[str, np.ndarray] | None:
    """Arrays a load computes from ``inputs`` with the code in ``sources``, as
    ``keep_arrays`` kept them; None when the cache has none (or cannot be read)."""
    try:
        path = _arrays_path(kind, inputs, sources)
        with np.load(path, allow_pickle=False) as kept:
            arrays = {name: kept[name] for name in kept.files}
        os.utime(path)  # in use (remove_stale)
    except (OSError, ValueError, EOFError):
        return None
    return arrays


def keep_arrays(
    kind: str, inputs: Sequence[Path], sources: Sequence[Path], arrays: dict[str, np.ndarray]
) -> None:
    """Keep ``arrays`` for ``cached_arrays``; never raises (the cache is only a saving)."""
    try:
        path = _arrays_path(kind, inputs, sources)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        remove_stale(kind, keep=path, suffix=".npz")
        out = io.BytesIO()
        np.savez(out, **arrays)  # type: ignore[arg-type]  # numpy's stub reads a name as allow_pickle
        write_atomic(path, out.getvalue())
    except OSError as exc:
        log.info("the %s arrays are not kept in the cache (%s)", kind, exc)


def remove_stale(kind: str, keep: Path, suffix: str = ".onnx") -> list[Path]:
    """Remove the cached graphs of ``kind`` other than ``keep`` that no process has
    loaded for ``STALE_DAYS``; returns them. A file another process removes first, or
    cannot be removed, is skipped: the cache is only ever a saving."""
    cutoff = time.time() - STALE_DAYS * 86400
    removed = []
    for path in keep.parent.glob(f"{kind}-*{suffix}"):
        try:
            if path != keep and path.stat().st_mtime < cutoff:
                path.unlink()
                removed.append(path)
        except OSError:
            continue
    return removed
