"""cronwright: a scheduler that scripts, operators and AI agents can safely share."""

# Kept light on purpose: target modules and workers import this, and the decorator imports the stdlib only.
from cronwright.targets.decorator import Context, action

__version__ = "0.1.0"

__all__ = ["Context", "__version__", "action"]
