"""The answer links' key and lifetime: a link outlives a restart (the key is the database's),
an operator's configured key replaces it, and a configured lifetime is honoured."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from clarion.config.links import AnswerLinkSettings, duration_s, load_answer_links
from clarion.runtime.clock import ManualClock
from tests.lifecycle.harness import detached_question
from tests.links.conftest import linked_app, settings_on


async def test_a_link_issued_before_a_restart_still_reads_its_bundle(
    store_url: str, clock: ManualClock
) -> None:
    settings = settings_on(store_url)
    async with linked_app(settings, clock) as first:
        _, session_id = await first.life.start_session()
        call, pending_id = await first.life.ask(session_id)
        token = await first.link_for(pending_id)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
    async with linked_app(settings, clock) as again:
        read = await again.http.get(f"/api/v1/a/{token}")
        assert read.status_code == 200, read.text
        assert read.json()["pending_id"] == pending_id


async def test_a_configured_key_signs_links_and_the_database_key_no_longer_does(
    store_url: str, clock: ManualClock
) -> None:
    async with linked_app(settings_on(store_url), clock) as plain:
        _, session_id = await plain.life.start_session()
        call, pending_id = await plain.life.ask(session_id)
        old = await plain.link_for(pending_id)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
    keyed = settings_on(store_url, answer_links=AnswerLinkSettings(secret="x" * 40))
    async with linked_app(keyed, clock) as rig:
        assert (await rig.http.get(f"/api/v1/a/{old}")).status_code == 404
        new = await rig.link_for(pending_id)
        assert (await rig.http.get(f"/api/v1/a/{new}")).status_code == 200


async def test_a_short_configured_lifetime_expires_the_link(
    store_url: str, clock: ManualClock
) -> None:
    short = settings_on(store_url, answer_links=AnswerLinkSettings(ttl_s=60))
    async with linked_app(short, clock) as rig:
        _, session_id = await rig.life.start_session()
        pending_id = await detached_question(rig.life, session_id)
        token = await rig.link_for(pending_id)
        clock.advance(59)
        assert (await rig.http.get(f"/api/v1/a/{token}")).status_code == 200
        clock.advance(1)
        assert (await rig.http.get(f"/api/v1/a/{token}")).status_code == 404
        # A fresh read hands out a fresh link, good for the whole lifetime again.
        assert (await rig.http.get(f"/api/v1/a/{await rig.link_for(pending_id)}")).is_success


def test_the_lifetime_and_key_are_read_from_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('answer_link_ttl = "2h"\nanswer_link_secret = "0123456789abcdef0123"\n')
    loaded = load_answer_links(str(config), {})
    assert loaded == AnswerLinkSettings(ttl_s=7200, secret="0123456789abcdef0123")
    assert load_answer_links(str(config), {"CLARION_ANSWER_LINK_TTL": "5s"}).ttl_s == 5
    assert load_answer_links(None, {}) == AnswerLinkSettings(ttl_s=7 * 86400, secret=None)


@pytest.mark.parametrize("bad", ["", "7", "0s", "-1d", "1w", "1.5h", True, 0, "2 h"])
def test_a_bad_lifetime_is_refused_naming_the_key(bad: object) -> None:
    with pytest.raises(ValueError, match="answer_link_ttl"):
        duration_s(bad, "c.toml: answer_link_ttl")


def test_a_short_configured_key_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('answer_link_secret = "short"\n')
    with pytest.raises(ValueError, match="answer_link_secret"):
        load_answer_links(str(config), {})


async def test_reads_close_together_hand_out_the_same_link(
    store_url: str, clock: ManualClock
) -> None:
    async with linked_app(settings_on(store_url), clock) as rig:
        _, session_id = await rig.life.start_session()
        pending_id = await detached_question(rig.life, session_id)
        clock.advance(1)  # just past an hour: the expiry rounds up to the next one
        first = await rig.link_for(pending_id)
        clock.advance(1800)  # within the default week's one-hour step
        inbox = (await rig.http.get("/api/v1/inbox")).json()
        assert rig.token_of(inbox["items"][0]["answer_url"]) == first
        clock.advance(3600)
        assert await rig.link_for(pending_id) != first
