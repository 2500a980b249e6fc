"""The dashboard's schedules page with 10,000 schedules, through a real `cronwright serve`.

A folder's store holds N cron schedules not due (one made through the CLI, the rest its copies in SQL);
`cronwright serve` runs on it, the operator logs in with the one-time link `cronwright dashboard` prints,
and the harness times GET /ui/ (the first page: 50 schedules, as `list` pages them) over HTTP, from the
request to the last byte of the page. Two warm-up requests, then the median of R. Target: under 300 ms.
The timeline's first page (40 lanes over the next 24 hours: a `get` and the walk for each) is timed the
same way, with no target.
No peer: none of the schedulers compared here ships a dashboard that pages a list this way.

    python bench/bench_ui.py [--schedules N] [--requests R]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import httpx
from common import Row, clone_rows, log, median, table, utc_now
from product import Serve, World

SCHEDULES = 10_000
REQUESTS = 21
TARGET_MS = 300.0


def link(world: World, env: dict[str, str]) -> str:
    """The operator's one-time link; serve publishes its key just after it listens."""
    deadline = time.monotonic() + 30
    while True:
        done = subprocess.run(
            world.argv("dashboard", "--no-browser"), capture_output=True, text=True, env=env, check=False
        )
        if done.returncode == 0:
            return done.stdout.strip()
        if time.monotonic() > deadline:
            raise RuntimeError(f"cronwright dashboard found no serve: {done.stderr[-400:]}")
        time.sleep(0.1)


def logged_in(link: str) -> httpx.Client:
    url = httpx.URL(link)
    base = str(url.copy_with(path="/", query=None)).rstrip("/")
    client = httpx.Client(base_url=base, timeout=60)
    client.get(link).raise_for_status()
    answer = client.post("/ui/login/link", data={"token": url.params["token"]}, headers={"Origin": base})
    if answer.status_code != 303:
        raise RuntimeError(f"the operator link did not log in: {answer.status_code} {answer.text[:200]}")
    return client


PAGES = {"/ui/": "schedules page (first 50)", "/ui/timeline": "timeline, 24 hours (first 40 lanes)"}


def page_ms(schedules: int, requests: int) -> dict[str, list[float]]:
    """Each page's times over `requests` requests (after two warm-ups), in ms."""
    with tempfile.TemporaryDirectory(prefix="bench-ui-") as folder:
        world = World(Path(folder))
        env = {**os.environ, "XDG_DATA_HOME": str(Path(folder) / "data")}
        later = utc_now() + timedelta(hours=1)
        world.add("ui-0", "py", "noop", "--cron", f"{later.minute} {later.hour} * * *")
        clone_rows(world.db, "ui-0", "ui-copy-", schedules - 1)
        serve = Serve(world, env=env)
        try:
            client = logged_in(link(world, env))
            samples: dict[str, list[float]] = {path: [] for path in PAGES}
            try:
                for path, found in samples.items():
                    for index in range(requests + 2):
                        began = time.perf_counter()
                        answer = client.get(path)
                        took = (time.perf_counter() - began) * 1000
                        answer.raise_for_status()
                        if "ui-copy-" not in answer.text:
                            raise RuntimeError(f"{path} does not show the schedules")
                        if index >= 2:
                            found.append(took)
            finally:
                client.close()
        finally:
            serve.stop()
    return samples


def rows(schedules: int = SCHEDULES, requests: int = REQUESTS) -> list[Row]:
    found: list[Row] = []
    for path, samples in page_ms(schedules, requests).items():
        ours = median(samples)
        log(f"ui: {path} among {schedules:,}: median {ours:.1f} ms of {requests}")
        verdict = "met" if ours < TARGET_MS else "NOT met"
        target = f"target < {TARGET_MS:.0f} ms ({verdict}); " if path == "/ui/" else ""
        found.append(
            Row(
                f"dashboard: {PAGES[path]} among {schedules:,}, through `serve`",
                "ms",
                "lower",
                ours,
                "",
                note=f"{target}median of {requests} requests; no peer",
                details={"samples_ms": samples, "schedules": schedules, "path": path},
            )
        )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--schedules", type=int, default=SCHEDULES)
    parser.add_argument("--requests", type=int, default=REQUESTS)
    options = parser.parse_args()
    print(table(rows(options.schedules, options.requests)))


if __name__ == "__main__":
    main()
