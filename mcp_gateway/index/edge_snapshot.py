"""Packing an embedded shard's files into one snapshot file, and unpacking one.

qdrant-edge can load a snapshot (``EdgeShard.unpack_snapshot``) but not make one, and
its own format is a Qdrant server's. A shard is a directory of files the engine maps;
copied while no write runs and after a flush (``EdgeIndex.copy_files``), the copy
opens as the same shard (its WAL replays what the flush already wrote: idempotent).

The engine preallocates its files (32 MB WAL segments and storage pages, 4 MB payload
index maps) and leaves them sparse: a shard of 61 notes is 241 MB long and 3.1 MB on
disk. A tar reads and writes every hole as zeros (a 1.2 MB snapshot took 2.9-5.6 s to
unpack), so files travel as their data extents only (``SEEK_DATA``/``SEEK_HOLE``) and
are unpacked with the holes left holes. The format, gzip'd (level 1): for each file a
4-byte big-endian header length, a JSON header ``{"path", "size", "extents": [[offset,
length], ...]}``, then the extents' bytes in order.

A path that would leave the target (absolute, ``..``) is refused: the file comes from
the truth store, which other processes write.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

LEVEL = 1
BLOCK = 1 << 20


def extents(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """The (offset, length) of each data extent of an open file (all of it where the
    filesystem cannot tell holes)."""
    offset = 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
            end = os.lseek(fd, start, os.SEEK_HOLE)
        except OSError as exc:  # ENXIO: no data past offset; EINVAL: not supported
            if exc.errno == errno.ENXIO:
                return
            yield offset, size - offset
            return
        yield start, min(end, size) - start
        offset = end


def _copy_range(src: BinaryIO, dst: BinaryIO, offset: int, length: int) -> None:
    src.seek(offset)
    dst.seek(offset)
    while length > 0:
        chunk = src.read(min(BLOCK, length))
        if not chunk:
            return
        dst.write(chunk)
        length -= len(chunk)


def _files(source: Path) -> list[Path]:
    return sorted(p for p in source.rglob("*") if p.is_file())


def copy_tree(source: Path, dest: Path) -> int:
    """Copy the files under ``source`` to ``dest`` (created), holes kept; returns the
    bytes of data copied."""
    done = 0
    for path in _files(source):
        target = dest / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        with path.open("rb") as src, target.open("wb") as dst:
            size = os.fstat(src.fileno()).st_size
            for offset, length in extents(src.fileno(), size):
                _copy_range(src, dst, offset, length)
                done += length
            dst.truncate(size)
    return done


def pack(source: Path, target: Path) -> int:
    """``source``'s files as one gzip'd snapshot at ``target``; returns its size."""
    with gzip.open(target, "wb", compresslevel=LEVEL) as out:
        for path in _files(source):
            with path.open("rb") as src:
                size = os.fstat(src.fileno()).st_size
                found = list(extents(src.fileno(), size))
                header = json.dumps(
                    {"path": path.relative_to(source).as_posix(), "size": size, "extents": found}
                ).encode()
                out.write(len(header).to_bytes(4, "big") + header)
                for offset, length in found:
                    src.seek(offset)
                    while length > 0:
                        chunk = src.read(min(BLOCK, length))
                        out.write(chunk)
                        length -= len(chunk)
    return target.stat().st_size


def unpack(archive: Path, dest: Path) -> None:
    """Unpack ``archive`` into ``dest`` (created), holes left holes. Raises
    ``ValueError`` on a malformed snapshot or a path outside ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    with gzip.open(archive, "rb") as f:
        while raw := f.read(4):
            header = json.loads(f.read(int.from_bytes(raw, "big")))
            rel = Path(str(header["path"]))
            if rel.is_absolute() or ".." in rel.parts or not rel.parts:
                raise ValueError(f"snapshot path {rel} is not inside it")
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("wb") as out:
                for offset, length in header["extents"]:
                    out.seek(int(offset))
                    left = int(length)
                    while left > 0:
                        chunk = f.read(min(BLOCK, left))
                        if not chunk:
                            raise ValueError(f"snapshot ends inside {rel}")
                        out.write(chunk)
                        left -= len(chunk)
                out.truncate(int(header["size"]))
