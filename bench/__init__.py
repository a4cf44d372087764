"""Clarion's benchmarks: question -> answer -> resume against a real `clarion serve`.

Run with `make bench` (or `python -m bench.run`). Nothing in `src/` imports this package;
it drives the server only through the public contract (HTTP, WebSocket, the CLI), except
where a measurement needs a prepared database, which it seeds through `clarion.store`.
"""
