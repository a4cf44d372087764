"""Command line entry point (placeholder until the CLI lands)."""


def main() -> None:
    raise SystemExit("clarion: not implemented yet")
