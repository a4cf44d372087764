"""Outgoing notifications: the background deliverer (deliverer.py) of the outbox's deliveries
(webhooks, email and Slack messages), its HTTP sender (sender.py) and its SMTP mailer
(mailer.py). Slack's poster has its own package (slack/), which the deliverer sends through.

Imported by the composition root only. Deliveries are queued by the store, in the transaction
that caused each event; this package only sends what is queued and records each attempt.
"""
