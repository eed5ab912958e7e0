"""Packing an embedded shard's files into one snapshot file, and unpacking one.

qdrant-edge can load a snapshot (``EdgeShard.unpack_snapshot``) but not make one, and
its own format is a Qdrant server's. A shard is a directory of files the engine maps;
copied while no write runs and after a flush (``EdgeIndex.copy_files``), the copy
opens as the same shard (its WAL replays what the flush already wrote: idempotent).
The pack is a gzip'd tar (level 1: the engine preallocates its files, mostly zeros,
which level 1 squeezes as well as level 9 at a fraction of the CPU).

A member name that would leave the target (absolute, ``..``, links) is refused: the
file comes from the truth store, which other processes write.
"""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path

LEVEL = 1


def copy_tree(source: Path, dest: Path) -> int:
    """Copy the files under ``source`` to ``dest`` (created); returns bytes copied.
    Holes stay holes where the filesystem keeps them (``copy_file_range``)."""
    done = 0
    for root, _dirs, files in os.walk(source):
        rel = Path(root).relative_to(source)
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            shutil.copyfile(Path(root) / name, dest / rel / name)
            done += (Path(root) / name).stat().st_size
    return done


def pack(source: Path, target: Path) -> int:
    """``source``'s files as a gzip'd tar at ``target``; returns its size in bytes."""
    with tarfile.open(target, "w:gz", compresslevel=LEVEL) as tar:
        for path in sorted(source.rglob("*")):
            if path.is_file():
                tar.add(path, arcname=str(path.relative_to(source)), recursive=False)
    return target.stat().st_size


def unpack(archive: Path, dest: Path) -> None:
    """Unpack ``archive`` into ``dest`` (created). Raises ``ValueError`` on a member
    that is not a plain file or directory inside ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            name = Path(member.name)
            if name.is_absolute() or ".." in name.parts or not (member.isfile() or member.isdir()):
                raise ValueError(f"snapshot member {member.name!r} is not a file inside it")
        tar.extractall(dest, filter="data")
