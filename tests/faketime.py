"""libfaketime for the black-box tests, preloaded directly rather than through the `faketime` wrapper.

The wrapper names a POSIX semaphore after its own pid and refuses to start ("sem_open: File exists") when a
run killed with SIGKILL left one behind under a pid that is now reused; a CI run failed that way. Preloading
the library with FAKETIME set does what the wrapper does for one process, without that semaphore.
"""

from __future__ import annotations

from pathlib import Path

import pytest

LIBRARY = next(
    (
        library
        for folder in (
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib",
            "/usr/local/lib",
        )
        if (library := Path(folder) / "faketime" / "libfaketime.so.1").exists()
    ),
    None,
)

needs_faketime = pytest.mark.skipif(
    LIBRARY is None, reason="black-box time travel needs libfaketime (apt install faketime)"
)


def faketime_env(spec: str) -> dict[str, str]:
    """The variables that run a process under libfaketime: `spec` in FAKETIME's own syntax, such as
    "@2026-03-02 09:00:05" (start at that instant, read in the process zone, and run) or "+2m" (an offset)."""
    assert LIBRARY is not None, "guard the test with needs_faketime"
    return {"LD_PRELOAD": str(LIBRARY), "FAKETIME": spec}
