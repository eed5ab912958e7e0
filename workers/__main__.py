import sys

from workers import StopRequested, stop_on_sigterm

try:
    stop_on_sigterm()  # a SIGTERM held until now is delivered here
    from workers.main import main

    code = main()
except StopRequested:
    print("kioku worker: stopped by SIGTERM before it started; no job taken", file=sys.stderr)
    code = 0
raise SystemExit(code)
