"""Lines in from stdin and out to stdout without a thread per line.

``anyio.wrap_file`` runs every read and write in a worker thread (two thread hops per
message each way); the proxy's whole job is copying lines, so it waits on the file
descriptors with the event loop instead (pipes, sockets and terminals are switched to
non-blocking while it runs and restored after: the terminal a user typed ``kioku
serve`` in is shared with their shell). A regular file (``kioku serve < requests``)
cannot be polled, so that case falls back to the thread per call.
"""

from __future__ import annotations

import os
import stat
import sys
from types import TracebackType

import anyio

_CHUNK = 1 << 16


def _pollable(fd: int) -> bool:
    try:
        return not stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


class StdioLines:
    def __init__(self, stdin_fd: int | None = None, stdout_fd: int | None = None) -> None:
        self._in = sys.stdin.fileno() if stdin_fd is None else stdin_fd
        self._out = sys.stdout.fileno() if stdout_fd is None else stdout_fd
        self._buffer = bytearray()
        self._eof = False
        self._restore: list[tuple[int, bool]] = []
        self._write_lock = anyio.Lock()
        self._reader_gone = False

    async def __aenter__(self) -> StdioLines:
        for fd in (self._in, self._out):
            if _pollable(fd) and (fd, os.get_blocking(fd)) not in self._restore:
                self._restore.append((fd, os.get_blocking(fd)))
                os.set_blocking(fd, False)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for fd, blocking in self._restore:
            try:
                os.set_blocking(fd, blocking)
            except OSError:
                pass
        self._restore.clear()

    def _nonblocking(self, fd: int) -> bool:
        return any(saved == fd for saved, _ in self._restore)

    async def readline(self) -> bytes:
        """The next line with its newline; the rest at EOF; b"" once stdin is done."""
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                return line
            if self._eof:
                rest = bytes(self._buffer)
                self._buffer.clear()
                return rest
            chunk = await self._read()
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True

    async def _read(self) -> bytes:
        if not self._nonblocking(self._in):
            return await anyio.to_thread.run_sync(os.read, self._in, _CHUNK)
        while True:
            try:
                return os.read(self._in, _CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(self._in)

    async def write(self, data: bytes) -> None:
        """Write all of ``data``; concurrent writers never interleave their lines. Once
        the reader has gone (the editor closed our stdout), lines are dropped: nobody is
        left to read them, and stdin's end will stop the proxy."""
        async with self._write_lock:
            if self._reader_gone:
                return
            try:
                await self._write_all(data)
            except (BrokenPipeError, ConnectionResetError):
                self._reader_gone = True

    async def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if not self._nonblocking(self._out):
                written = await anyio.to_thread.run_sync(os.write, self._out, view)
            else:
                try:
                    written = os.write(self._out, view)
                except BlockingIOError:
                    await anyio.wait_writable(self._out)
                    continue
            view = view[written:]
