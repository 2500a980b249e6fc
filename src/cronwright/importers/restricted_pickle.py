"""Reads an APScheduler 3 job's pickled state without importing anything of the user's.

A job row's `job_state` is `pickle(Job.__getstate__())`: a plain dict whose `func` is already a
"module:qualname" text, and whose trigger is an APScheduler trigger object. Plain `pickle.loads` would
import whatever module any class in it names; this unpickler loads only the classes listed below (the
triggers and what they hold: dates, zones), and refuses every other name with `Refused`, so a row whose args
hold a user's object is refused with that object's name rather than run through its module's import.
"""

from __future__ import annotations

import importlib
import io
import pickle
from typing import Any

# Modules whose own classes may be loaded (a class defined elsewhere but imported there is refused).
_CLASS_MODULES = (
    "apscheduler.triggers.cron",
    "apscheduler.triggers.cron.fields",
    "apscheduler.triggers.cron.expressions",
    "apscheduler.triggers.interval",
    "apscheduler.triggers.date",
    "apscheduler.triggers.combining",
    "apscheduler.triggers.calendarinterval",
)
_NAMES = {
    ("datetime", "datetime"),
    ("datetime", "date"),
    ("datetime", "time"),
    ("datetime", "timedelta"),
    ("datetime", "timezone"),
    ("zoneinfo", "ZoneInfo"),
    ("collections", "OrderedDict"),
}


class Refused(pickle.UnpicklingError):
    """The pickle names something this reader will not load."""


def _getattr(owner: object, name: str) -> Any:
    # A ZoneInfo pickles as getattr(ZoneInfo, "_unpickle")(key, ...): that attribute alone is reachable.
    from zoneinfo import ZoneInfo

    if owner is ZoneInfo and name == "_unpickle":
        return ZoneInfo._unpickle  # type: ignore[attr-defined]
    raise Refused(f"getattr({getattr(owner, '__name__', owner)!r}, {name!r}) is not one this reader allows")


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("builtins", "getattr"):
            return _getattr
        if (module, name) in _NAMES:
            return super().find_class(module, name)
        if module in _CLASS_MODULES:
            try:
                found = getattr(importlib.import_module(module), name)
            except (ImportError, AttributeError) as error:
                raise Refused(
                    f"{module}.{name} cannot be loaded ({error}): is apscheduler 3 installed?"
                ) from None
            if isinstance(found, type) and found.__module__ == module:
                return found
        raise Refused(f"{module}.{name} is not an APScheduler trigger class; loading it would import it")


def load_state(blob: bytes) -> dict[str, Any]:
    """The job's state dict; `Refused` for anything but triggers and plain values, pickle errors as raised."""
    state = _Unpickler(io.BytesIO(blob)).load()
    if not isinstance(state, dict):
        raise Refused(f"the row holds a {type(state).__name__}, not a job's state")
    return state
