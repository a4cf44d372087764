"""`clarion demo`: the whole story on a throwaway server; see clarion.demo.story."""

from __future__ import annotations

import typer

from clarion.client.render import stdout


def demo() -> None:
    """Run the clarification story end to end on a temporary database."""
    from clarion.demo.story import run_demo

    try:
        code = run_demo(stdout())
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
