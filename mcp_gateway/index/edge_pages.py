"""Giving back the resident pages of an embedded shard's files (Linux).

The engine maps its files and keeps what it touched resident: opening a shard reads
its WAL segments in whole (up to three 32 MB files: 64 MB resident at 10k notes), each
payload index's files (~5 MB each) and the sparse vectors it builds its in-memory
inverted index from; every write leaves its WAL pages resident, and the sparse vectors'
and payloads' stores append each version of a point (a note is written about three
times: lexical, draft, exact). The engine needs little of that again (the WAL is only
appended to; the indexes it built live in memory), so ``MADV_PAGEOUT`` asks the kernel
to reclaim those pages: it writes back what is dirty and frees the rest; a page used
again is read back in. The hint never changes what a mapping holds, so a range that
changed between reading ``/proc/self/maps`` and the call only loses pages it gets back
on use.

At open, all is given back but the HNSW graphs a graphed collection's searches walk
(``GRAPHS``; a plain segment's dense vectors are read back by its first exact scan);
then the files every search reads hits from (``READ_BACK``: the stored dense vectors
a walk's candidates are rescored with, the payloads) are read back
(``read_ahead``): into the page cache by a background thread, in large reads, so
the first searches map them from memory instead of faulting each 4 KB page in from the
file. Resident memory at open is the same; once searched it grows sooner
(``read_ahead``). At 100k distinct notes a new query's index call right after the open
was 9.9-13.1 ms p50 with the files left to the faults and 4.5-5.4 with them read in
whole first (bench/LOG.md, "scale at 100k on distinct text");
after writes (at most every ``PAGE_OUT_EVERY_S``), all but what every search reads
(``SEARCHED``: the dense vectors and graphs, an optimised segment's sparse indexes).
Measured (bench/LOG.md, "footprint at 10k"): a shard of 10k notes opened with
193 MB of mapped files resident, 32 MB after this; after 200 searches 59 MB against 213,
search time the same.
"""

from __future__ import annotations

import ctypes
import logging
import sys
import threading
from pathlib import Path

log = logging.getLogger(__name__)

MADV_PAGEOUT = 21  # Linux 5.4+; older kernels answer EINVAL and nothing changes
# how often the pages writes left resident are given back (after a write)
PAGE_OUT_EVERY_S = 30.0
# what every search reads, kept resident between writes: the dense vectors (the plain
# segment's exact scan reads them all) and their HNSW graphs; further dense channels'
# vector names start with "dense" too
GRAPHS = ("/vector_index-dense",)
# what searches read hits from after an open: the stored dense vectors (rescoring, the
# plain segment's exact scan) and the payloads
READ_BACK = ("/vector_storage-dense", "/payload_storage")
# and an optimised segment's mapped sparse indexes (``edge_shard.SPARSE_MEMORY``; a plain
# segment's are in the heap): given back after each write, a search's 64 latent terms
# would read their posting lists from the disk again
SEARCHED = ("/vector_storage-dense", *GRAPHS, "/vector_index-sparse", "/vector_index-latent")

_madvise = None
if sys.platform == "linux":
    try:
        _libc = ctypes.CDLL(None, use_errno=True)
        _madvise = _libc.madvise
        _madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        _madvise.restype = ctypes.c_int
    except (OSError, AttributeError):  # pragma: no cover - no libc madvise
        _madvise = None


def page_out(directory: Path, keep: tuple[str, ...] = ()) -> int:
    """Ask the kernel to reclaim this process's resident pages of files under
    ``directory``, but for those whose path has one of ``keep``. Returns the bytes of
    mappings advised; 0 where the platform has no such hint."""
    if _madvise is None:
        return 0
    prefix = str(directory.resolve()) + "/"
    try:
        lines = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return 0
    advised = 0
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or not fields[5].startswith(prefix):
            continue
        if any(k in fields[5] for k in keep):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        if _madvise(start, end - start, MADV_PAGEOUT) == 0:
            advised += end - start
    log.debug("paged out %d MB of mappings under %s", advised >> 20, directory)
    return advised


def read_back_paths(directory: Path, parts: tuple[str, ...]) -> list[Path]:
    """The files under ``directory`` whose path has one of ``parts`` (none where the
    folder is gone: a build may replace a shard's segments while this walks)."""
    try:
        found = [p for p in sorted(directory.rglob("*")) if any(x in str(p) for x in parts)]
    except OSError:
        return []
    return [p for p in found if p.is_file()]


def read_ahead(directory: Path, parts: tuple[str, ...]) -> threading.Thread:
    """Read the files under ``directory`` whose path has one of ``parts`` into the
    page cache, in a daemon thread (returned, started; the walk too, so an open does
    not wait), 4 MB a read. Read, not advised: ``POSIX_FADV_WILLNEED`` on the same
    files left the first searches as slow as before (bench/LOG.md). A file removed
    meanwhile is skipped. The process's resident memory is the same at open; once
    searched it grows sooner (100k notes: +41 MB after 150 new questions, +16 after
    300; 10k: no change), as a search's fault finds its neighbouring pages cached."""

    def read() -> None:
        done = 0
        for path in read_back_paths(directory, parts):
            try:
                with open(path, "rb", buffering=0) as f:
                    while chunk := f.read(1 << 22):
                        done += len(chunk)
            except OSError:
                continue  # removed by a build meanwhile: nothing to read
        log.debug("read %d MB of files under %s back", done >> 20, directory)

    thread = threading.Thread(target=read, name="kioku-read-ahead", daemon=True)
    thread.start()
    return thread
