"""Outgoing notifications: the background deliverer (deliverer.py) of webhooks and email, its
HTTP sender (sender.py) and its SMTP mailer (mailer.py). Slack's messages have their own package
(slack/), fed by the same outbox.

Imported by the composition root only. Deliveries are queued by the store, in the transaction
that caused each event; this package only sends what is queued and records each attempt.
"""
