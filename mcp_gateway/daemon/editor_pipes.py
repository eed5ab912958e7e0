"""The proxy's two ends toward the editor: stdin read in chunks, stdout written in whole
lines (never interleaved), and whether anyone still reads stdout."""

from __future__ import annotations

import os
import select
import threading

CHUNK = 1 << 16


class EditorPipes:
    def __init__(self, stdin_fd: int = 0, stdout_fd: int = 1) -> None:
        self._in, self._out = stdin_fd, stdout_fd
        self._write_lock = threading.Lock()  # whole lines on stdout
        self._reader_gone = False

    def write(self, data: bytes) -> None:
        """Write all of ``data``; concurrent writers never interleave their lines. Once
        the reader has gone (the editor closed our stdout), lines are dropped: nobody is
        left to read them, and stdin's end will stop the proxy."""
        with self._write_lock:
            if self._reader_gone:
                return
            view = memoryview(data)
            try:
                while view:
                    try:
                        view = view[os.write(self._out, view) :]
                    except BlockingIOError:  # an editor that left our stdout non-blocking
                        select.select([], [self._out], [])
            except (BrokenPipeError, ConnectionResetError):
                self._reader_gone = True

    def read(self) -> bytes:
        while True:
            try:
                return os.read(self._in, CHUNK)
            except BlockingIOError:  # an editor that left our stdin non-blocking
                select.select([self._in], [], [])

    def stdout_gone(self) -> bool:
        """Whether our stdout's reader closed its end (a pipe reports an error then)."""
        if self._reader_gone:
            return True
        poller = select.poll()
        poller.register(self._out, select.POLLOUT)
        for _, events in poller.poll(0):
            if events & (select.POLLERR | select.POLLHUP | select.POLLNVAL):
                self._reader_gone = True
        return self._reader_gone


def complete_lines(buffer: bytearray, chunk: bytes) -> list[bytes]:
    """Append ``chunk`` to ``buffer``; take out and return the lines it completed (with
    their newlines). Only the new bytes are searched: a multi-megabyte line arriving in
    64 KiB reads is scanned once, not once a read."""
    searched = len(buffer)
    buffer += chunk
    lines = []
    start = 0
    while (end := buffer.find(b"\n", max(start, searched))) >= 0:
        lines.append(bytes(buffer[start : end + 1]))
        start = end + 1
    del buffer[:start]
    return lines
