"""`answer_link_ttl` and `answer_link_secret` from the config file: how long an answer link
stays valid, and the key that signs it when the operator sets one (otherwise the server
generates one and keeps it in the database). Imports only `clarion.config.files` and the
pure domain's duration parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clarion.config.files import read_config
from clarion.domain.waiting import parse_duration

DEFAULT_TTL_S = 7 * 24 * 3600.0
MIN_SECRET = 16


@dataclass(frozen=True, slots=True)
class AnswerLinkSettings:
    ttl_s: float = DEFAULT_TTL_S
    secret: str | None = None  # None: the database's generated one


def duration_s(value: Any, where: str) -> float:
    """A lifetime in the config file's one duration form (`"30m"`, `"8h"`, `"7d"`)."""
    try:
        return float(parse_duration(value).seconds)
    except ValueError as exc:
        raise ValueError(f"{where} {exc}") from exc


def load_answer_links(config_file: str | None, env: Mapping[str, str]) -> AnswerLinkSettings:
    """Top-level `answer_link_ttl = "7d"` (env `CLARION_ANSWER_LINK_TTL` wins) and
    `answer_link_secret = "..."` (at least 16 characters)."""
    data: dict[str, Any] = {} if not config_file else read_config(Path(config_file))
    where = config_file or "config"
    ttl = DEFAULT_TTL_S
    if env.get("CLARION_ANSWER_LINK_TTL"):
        ttl = duration_s(env["CLARION_ANSWER_LINK_TTL"], "CLARION_ANSWER_LINK_TTL")
    elif "answer_link_ttl" in data:
        ttl = duration_s(data["answer_link_ttl"], f"{where}: answer_link_ttl")
    secret = data.get("answer_link_secret")
    if secret is not None and (not isinstance(secret, str) or len(secret) < MIN_SECRET):
        raise ValueError(
            f"{where}: answer_link_secret must be a string of at least {MIN_SECRET} characters"
        )
    return AnswerLinkSettings(ttl_s=ttl, secret=secret)
