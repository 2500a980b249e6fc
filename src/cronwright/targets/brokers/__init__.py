"""Broker targets: one engine module per broker (celery, nats) behind the `Broker` protocol in message.py.

Empty on purpose, like its parent: a node with no broker target imports none of the engines' libraries.
"""
