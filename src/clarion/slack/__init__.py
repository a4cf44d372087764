"""Answering in Slack: the question's message and its updates (poster.py, closer.py, sent from
the notification outbox), and the clicks and modal submissions that come back (inbox.py
acknowledges and queues them durably, answerer.py answers them through the respond path).

Imported by the composition root and the HTTP edge; storage is reached through
`clarion.ports.slack.SlackStore` only.
"""
