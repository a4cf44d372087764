"""`answer_link_ttl` and `answer_link_secret` from the config file: how long an answer link
stays valid, and the key that signs it when the operator sets one (otherwise the server
generates one and keeps it in the database). Built from the one parse of the file
(`clarion.config.document`), which checks the keys' shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clarion.config.defaults import MIN_SECRET
from clarion.config.load import read_document
from clarion.domain.waiting import parse_duration

if TYPE_CHECKING:
    from clarion.config.document import ConfigDocument

DEFAULT_TTL_S = 7 * 24 * 3600.0
__all__ = ["MIN_SECRET", "AnswerLinkSettings", "answer_links", "duration_s", "load_answer_links"]


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


def answer_links(document: ConfigDocument, env: Mapping[str, str]) -> AnswerLinkSettings:
    """Top-level `answer_link_ttl = "7d"` (env `CLARION_ANSWER_LINK_TTL` wins) and
    `answer_link_secret = "..."` (at least 16 characters)."""
    ttl = DEFAULT_TTL_S
    if env.get("CLARION_ANSWER_LINK_TTL"):
        ttl = duration_s(env["CLARION_ANSWER_LINK_TTL"], "CLARION_ANSWER_LINK_TTL")
    elif document.answer_link_ttl is not None:
        ttl = float(document.answer_link_ttl.seconds)
    return AnswerLinkSettings(ttl_s=ttl, secret=document.answer_link_secret)


def load_answer_links(config_file: str | None, env: Mapping[str, str]) -> AnswerLinkSettings:
    return answer_links(read_document(config_file, env), env)
