"""The `--database` flag of the commands that open the database directly (`clarion db`,
`clarion token`, `clarion doctor`), and the one rule for which database that is: the flag, else
`CLARION_DATABASE_URL`, else the same default as `clarion serve`.

Also the checks those commands (and `serve`) make before anything opens it: a URL of a kind
Clarion serves (else a usage error, exit 2), and, for the commands that only read, a SQLite
file that exists (they never create one).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

import typer

from clarion.cli.errors import fail
from clarion.config import default_database_url

DatabaseOpt = typer.Option(
    None,
    "--database",
    help="sqlite:///PATH or postgresql://... [env CLARION_DATABASE_URL, default as serve]",
)

_SCHEMES = ("sqlite", "postgresql", "postgres")


def database_url(database: str | None) -> str:
    """The database to open; exit 2 with one line if it is not a URL Clarion serves."""
    url = database or os.environ.get("CLARION_DATABASE_URL") or default_database_url(os.environ)
    return checked_url(url)


def unsupported(url: str) -> str | None:
    """Why `url` is not a database Clarion can serve, or None."""
    scheme = url.split("://", 1)[0].split("+", 1)[0].lower() if "://" in url else ""
    if scheme not in _SCHEMES:
        return f"unsupported database URL {url!r}: use sqlite:///PATH or postgresql://..."
    return None


def checked_url(url: str) -> str:
    reason = unsupported(url)
    if reason is not None:
        raise fail(reason, 2)
    return url


def sqlite_file(url: str) -> Path | None:
    """The file of a `sqlite:///PATH` URL; None for PostgreSQL or an in-memory database."""
    if not url.lower().startswith("sqlite"):
        return None
    path = unquote(urlsplit(url).path)
    path = path[1:] if path.startswith("/") else path  # `sqlite:///rel`, `sqlite:////abs`
    if not path or path == ":memory:" or path.startswith("file:"):
        return None
    return Path(path).expanduser()


def missing_database(url: str) -> Path | None:
    """The SQLite file `url` names when there is none: a read-only command stops there."""
    file = sqlite_file(url)
    return file if file is not None and not file.is_file() else None


def require_database(url: str) -> None:
    """Exit 1 with `no database at PATH` when the SQLite file does not exist."""
    missing = missing_database(url)
    if missing is not None:
        raise fail(f"no database at {missing}", 1)
