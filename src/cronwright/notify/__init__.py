"""Alerts (DESIGN semantic 38): transitions, the rules that route them, channels, and the outbox's delivery.

`model` holds the value objects, `rules` decides which channels a transition goes to, `plan` is the pure
part of delivery (what to send now, backoff, digests), `channels` does the sending and `deliver` ties an
outbox to the channels.
"""
