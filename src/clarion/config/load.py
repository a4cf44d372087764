"""`read_document`: the one way into the config file's models. The models (and pydantic) load
on the first read, not when the settings' types are imported: the CLI's client commands import
those types on every start and never read the file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clarion.config.document import ConfigDocument


def read_document(config_file: str | None, env: Mapping[str, str]) -> ConfigDocument:
    """The file at `config_file`, read and parsed once; ValueError naming the file, the key
    and the problem. Without a file, every key its default."""
    from clarion.config.document import parse_file

    return parse_file(config_file, env)
