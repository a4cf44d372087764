"""The advertise URLs session reads carry (server/cluster.py `AdvertisedUrls`): read from the
live replicas once per replica id, kept while it lives, read again once it is seen gone; a
replica that is not live has none."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast

from clarion.ports.cluster import ReplicaInfo
from clarion.server.cluster import AdvertisedUrls
from clarion.server.replica import Replica


class Live:
    """Stands in for the Replica: the live replicas' rows, counting the reads."""

    def __init__(self, urls: dict[str, str]) -> None:
        self.urls = urls
        self.reads = 0

    async def replicas(self) -> list[ReplicaInfo]:
        self.reads += 1
        now = datetime.now(UTC)
        return [ReplicaInfo(rid, url, "active", now, now, 0) for rid, url in self.urls.items()]


async def test_urls_are_read_once_per_replica_and_again_once_it_is_gone() -> None:
    live = Live({"a": "http://a:8787", "b": "http://b:8787"})
    urls = AdvertisedUrls(cast(Replica, live))
    assert await urls({"a"}) == {"a": "http://a:8787"}
    assert await urls({"a", "b"}) == {"a": "http://a:8787", "b": "http://b:8787"}
    assert live.reads == 1  # b came with a's read
    urls.forget("b")
    del live.urls["b"]
    assert await urls({"a", "b"}) == {"a": "http://a:8787"}
    assert await urls({"b"}) == {}  # not live: no address, asked again each time
    assert live.reads == 3
