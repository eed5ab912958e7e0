"""Run a command, then print its wall time and its CPU seconds (what ``make test`` shows).

    python bench/clocked.py LABEL COMMAND [ARG ...]

The CPU is user + system time of the command and of every descendant it waited for
(``RUSAGE_CHILDREN``: pytest, the ``kioku`` commands and servers the tests run and
reap). On a shared machine the wall time says more about the load than about the
suite; the CPU is what grows with the project. Not counted: processes nobody waits for
(a daemon a test leaves to idle out, the machine's PostgreSQL). The exit status is the
command's.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    label, command = argv[0], argv[1:]
    began = time.monotonic()
    try:
        status = subprocess.call(command)
    except KeyboardInterrupt:
        status = 130
    wall = time.monotonic() - began
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"{label}: wall time {wall:.0f} s, CPU {used.ru_utime + used.ru_stime:.0f} s "
        f"(user {used.ru_utime:.0f} + sys {used.ru_stime:.0f}; load average now {load})"
    )
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
