"""The proxy's stdio: lines from pipes and files, writes to a reader that left, and the
descriptors' blocking mode given back (a terminal is shared with the user's shell)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from mcp_gateway.stdio_lines import StdioLines


async def test_lines_across_chunks_then_the_rest_at_eof() -> None:
    rin, win = os.pipe()
    rout, wout = os.pipe()
    try:
        async with StdioLines(rin, wout) as stdio:
            os.write(win, b'{"a":1}\n{"b"')
            assert await stdio.readline() == b'{"a":1}\n'

            async def finish() -> None:
                await anyio.sleep(0.05)  # the reader waits on the pipe meanwhile
                os.write(win, b":2}\n{partial")
                os.close(win)

            async with anyio.create_task_group() as tg:
                tg.start_soon(finish)
                assert await stdio.readline() == b'{"b":2}\n'
            assert await stdio.readline() == b"{partial"
            assert await stdio.readline() == b""
    finally:
        for fd in (rin, rout, wout):
            os.close(fd)


async def test_blocking_mode_is_given_back() -> None:
    rin, win = os.pipe()
    rout, wout = os.pipe()
    try:
        async with StdioLines(rin, wout):
            assert not os.get_blocking(rin) and not os.get_blocking(wout)
        assert os.get_blocking(rin) and os.get_blocking(wout)
    finally:
        for fd in (rin, win, rout, wout):
            os.close(fd)


async def test_a_large_write_waits_for_the_reader() -> None:
    rin, win = os.pipe()
    rout, wout = os.pipe()
    data = b"x" * (1 << 20) + b"\n"  # far over a pipe's buffer
    received = bytearray()

    def drain() -> None:
        while len(received) < len(data):
            received.extend(os.read(rout, 1 << 16))

    try:
        async with StdioLines(rin, wout) as stdio, anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, drain)
            await stdio.write(data)
        assert bytes(received) == data
    finally:
        for fd in (rin, win, rout, wout):
            os.close(fd)


async def test_writes_after_the_reader_left_are_dropped() -> None:
    rin, win = os.pipe()
    rout, wout = os.pipe()
    os.close(rout)  # the editor closed our stdout
    try:
        async with StdioLines(rin, wout) as stdio:
            await stdio.write(b'{"id":1}\n')  # no BrokenPipeError escapes
            await stdio.write(b'{"id":2}\n')
    finally:
        for fd in (rin, win, wout):
            os.close(fd)


async def test_a_regular_file_on_stdin_is_read_too(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(b'{"id":1}\n{"id":2}\n')
    rout, wout = os.pipe()
    fd = os.open(requests, os.O_RDONLY)
    try:
        async with StdioLines(fd, wout) as stdio:
            assert os.get_blocking(fd)  # epoll cannot watch a file: read in a thread
            assert [await stdio.readline() for _ in range(3)] == [
                b'{"id":1}\n',
                b'{"id":2}\n',
                b"",
            ]
    finally:
        for f in (fd, rout, wout):
            os.close(f)
