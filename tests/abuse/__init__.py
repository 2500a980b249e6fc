"""Abuse tests (issue 8): hostile input thrown at the protocol. No crash, no hang, bounded memory."""
