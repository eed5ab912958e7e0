from workers import run_entry


def start() -> int:
    from workers.main import main  # imported after the SIGTERM handler is in place

    return main()


raise SystemExit(run_entry(start))
