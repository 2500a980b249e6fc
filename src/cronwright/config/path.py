"""Where the config file is: a question answered without importing the config's models (config.py), so that a
`tick` can look up what its config made last time (targets/cache.py) before it pays for them."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "CRONWRIGHT_CONFIG"
DEFAULT_NAME = "cronwright.toml"


def locate(explicit: str | None) -> Path | None:
    """`--config`, else $CRONWRIGHT_CONFIG, else ./cronwright.toml, else none (built-in defaults)."""
    if explicit:
        return Path(explicit)
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    local = Path(DEFAULT_NAME)
    return local if local.exists() else None
