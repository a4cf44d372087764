"""The tests' ports come from below the ephemeral range, a block per pytest worker."""

from __future__ import annotations

import socket

from tests import ports


def test_a_free_port_lies_below_the_ephemeral_range_in_this_workers_block() -> None:
    port = ports.free_port()
    assert ports.LOWEST <= port < ports.ephemeral_low()
    assert port in ports.block()


def test_workers_blocks_do_not_overlap() -> None:
    blocks = [set(ports.block(f"gw{i}")) for i in range(ports.BLOCKS)]
    assert all(len(b) > 500 for b in blocks)
    assert len(set().union(*blocks)) == sum(len(b) for b in blocks)
    assert set(ports.block("")) == blocks[-1]


def test_successive_ports_differ_and_a_held_port_is_skipped() -> None:
    first = ports.free_port()
    with socket.socket() as holder:
        upcoming = ports.block()[ports._next[0] % len(ports.block())]
        holder.bind(("127.0.0.1", upcoming))
        holder.listen()
        second = ports.free_port()
    assert second not in (first, upcoming)
