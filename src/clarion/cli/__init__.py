"""The `clarion` command. `main` is the console-script entry point."""

from clarion.cli.app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
