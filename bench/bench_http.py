"""Load on the HTTP API over loopback: many concurrent agents creating and listing schedules.

`cronwright serve` runs in its own process, on a SQLite store. Each client is an agent with its own
source, token and connection: it creates a schedule (`POST /v1/call`) and then lists its schedules
(`GET /v1/jobs`), again and again until the time is up. It reports requests per second and p50/p99 latency
per operation, every error, and whether anything was lost: the store must hold exactly as many schedules as
creates succeeded.

    .venv/bin/python bench/bench_http.py [--clients 200] [--seconds 30] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from cronwright.store.sqlite import SqliteStore


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


async def client(url: str, number: int, deadline: float, out: dict[str, Any]) -> None:
    headers = {"Authorization": f"Bearer {token(number)}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
        index = 0
        while time.perf_counter() < deadline:
            index += 1
            job = {
                "name": f"c{number}-{index}",
                "target": "bench",
                "action": "noop",
                "schedule": {"cron": "0 3 1 1 *"},
            }
            create = http.build_request("POST", "/v1/call", json={"action": "create_job", "job": job})
            listing = http.build_request("GET", "/v1/jobs", params={"target": "bench"})
            for op, request in (("create", create), ("list", listing)):
                started = time.perf_counter()
                try:
                    reply = await http.send(request)
                    ok = reply.status_code == 200 and reply.json().get("ok") is True
                    detail = f"{reply.status_code} {reply.text[:80]}"
                except httpx.HTTPError as error:
                    ok, detail = False, repr(error)
                out["latency"][op].append(time.perf_counter() - started)
                if ok:
                    out["ok"][op] += 1
                else:
                    out["errors"][f"{op}: {detail}"] += 1


async def load(url: str, clients: int, seconds: float) -> dict[str, Any]:
    out: dict[str, Any] = {"latency": {"create": [], "list": []}, "ok": Counter(), "errors": Counter()}
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()
    await asyncio.gather(*(client(url, number, deadline, out) for number in range(clients)))
    out["elapsed"] = time.perf_counter() - started
    return out


CONFIG = """
[node]
zone = "UTC"
store = "sqlite:///{folder}/bench.db"
listen = "127.0.0.1:0"

[targets.bench]
kind = "command"
[targets.bench.actions.noop]
argv = ["/bin/true"]
"""
SOURCE = """
[sources.agent{number}]
token_sha256 = "{digest}"
targets = ["bench.*"]
"""


def token(number: int) -> str:
    return f"bench-token-{number}"


def serve(config: Path) -> tuple[subprocess.Popen[str], str]:
    """`cronwright serve` in its own process (so the clients never share its interpreter), and its URL."""
    command = [str(Path(sys.executable).with_name("cronwright")), "--config", str(config), "serve"]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    for line in process.stderr:
        url = json.loads(line).get("url")  # serve logs one JSON object per line
        if url:
            return process, str(url)
    raise SystemExit(f"cronwright serve exited with status {process.wait()} before it listened")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--json", type=Path, help="Also write the figures here.")
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "cronwright.toml"
        sources = "".join(
            SOURCE.format(number=number, digest=hashlib.sha256(token(number).encode()).hexdigest())
            for number in range(options.clients)
        )
        config.write_text(CONFIG.format(folder=folder) + sources, encoding="utf-8")
        process, url = serve(config)
        try:
            out = asyncio.run(load(url, options.clients, options.seconds))
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(120)
            assert process.stderr is not None
            process.stderr.close()
        store = SqliteStore(Path(folder) / "bench.db")
        stored = len(store.jobs())
        store.close()

    requests = sum(len(values) for values in out["latency"].values())
    figures = {
        "clients": options.clients,
        "seconds": round(out["elapsed"], 1),
        "requests": requests,
        "requests_per_second": round(requests / out["elapsed"], 1),
        "errors": sum(out["errors"].values()),
        "creates_ok": out["ok"]["create"],
        "schedules_stored": stored,
        "lost": out["ok"]["create"] - stored,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        **{
            f"{op}_{name}_ms": round(1000 * percentile(values, share), 1)
            for op, values in out["latency"].items()
            for name, share in (("p50", 0.5), ("p99", 0.99))
        },
        "mean_ms": round(1000 * statistics.fmean(v for values in out["latency"].values() for v in values), 1),
    }
    for key, value in figures.items():
        print(f"{key:>22}: {value}")
    for error, count in out["errors"].most_common(5):
        print(f"  error x{count}: {error}")
    if options.json:
        options.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    if figures["errors"] or figures["lost"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
