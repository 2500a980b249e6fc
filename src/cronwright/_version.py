"""The version, alone, so that nothing imports the package root (and all it pulls in) for it."""

__version__ = "0.1.0"
