"""Outgoing webhooks: the background deliverer (deliverer.py) and its HTTP sender (sender.py).

Imported by the composition root only. Deliveries are queued by the store, in the transaction
that caused each event; this package only sends what is queued and records each attempt.
"""
