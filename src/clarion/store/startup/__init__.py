"""Startup recovery in the store: one module per decision, in the order startup takes them.

- `reservations.py`: each unpublished successor reservation is kept (dispatch may have
  happened) or deleted with its claim restored or retired.
- `intents.py`: each delivery intent no reservation owns is restored or retired.
- `start_events.py`: start events of kept reservations, replayed then cleared.
- `orphans.py`: every live question left without its waiter is detached.
- `open_turns.py`: every open turn is completed as interrupted.
- `sessions.py`: sessions are moved to the state their rows now call for.

Each step is one write transaction under the startup lock (`shared.py` holds what several
steps read), acts only on rows still carrying the markers it retires, and so is harmless to
run twice. Used by the port implementations beside it (store-internal).
"""
