"""cronwright: a scheduler that scripts, operators and AI agents can safely share."""

__version__ = "0.1.0"
