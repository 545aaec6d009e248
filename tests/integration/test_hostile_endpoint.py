"""`tune bench` against a hostile endpoint (tests/integration/hostile_server.py, a real process):
malformed events, an endless stream, an event that never ends (256 MiB of it on offer), a wrong
content type, a stream closed mid-way, silence, an error without end. Each request is a record
with its error, the run ends (exit 3: no load met the SLOs) within the requests' bound, and the
client's memory stays bounded."""

from __future__ import annotations

import csv
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from tuner.launch import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
MIB = 2**20

EXPECTED = {  # the error each kind of answer leaves in its record
    "malformed": "bad SSE payload",
    "endless": "an endless stream",
    "huge": "an event longer than 1 MiB",
    "html": "no server-sent event with data: the body began '<!doctype html>",
    "cut": "",  # each transport says it in its words: CUT
    "silent": "timeout: no end after 10 s (request_timeout_s)",
    "error_without_end": "HTTP 500: overloaded overloaded",
}
KINDS = list(EXPECTED)
CUT = {"raw": "ConnectionError: the server closed the connection",
       "httpx": "RemoteProtocolError: peer closed connection without sending complete message",
       "aiohttp": "ClientPayloadError: Response payload is not completed"}


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    with (tmp_path / "server.txt").open("w") as log:
        server = subprocess.Popen([sys.executable, "-m", "tests.integration.hostile_server",
                                   str(port)], cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/v1/models", timeout=1)
                break
            except httpx.HTTPError:
                assert server.poll() is None, (tmp_path / "server.txt").read_text()
                assert time.monotonic() < deadline, "the hostile endpoint did not start"
                time.sleep(0.2)
        yield url
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("transport", list(CUT))
def test_a_hostile_endpoint_gives_records_with_errors_and_bounded_memory(
        tiny_model: Path, tmp_path: Path, hostile: str, transport: str) -> None:
    out = tmp_path / "bench.json"
    bench = subprocess.Popen(
        [sys.executable, "-m", "tuner", "bench", "--endpoint", hostile,
         "--workload", str(REPO / "tests" / "data" / "workload-hostile.yaml"),
         "--workers", "1", "--json", str(out), "--transport", transport],
        stdout=(tmp_path / "out.txt").open("w"), stderr=(tmp_path / "err.txt").open("w"),
        text=True)
    watched = psutil.Process(bench.pid)
    peak = 0
    t0 = time.monotonic()
    while bench.poll() is None:
        try:
            peak = max(peak, watched.memory_info().rss)
        except psutil.NoSuchProcess:
            break
        assert time.monotonic() - t0 < 300, "tune bench did not end"
        time.sleep(0.05)
    err = (tmp_path / "err.txt").read_text()
    assert bench.returncode == 3, err[-3000:]  # measured, and no load met the SLOs
    assert "Traceback" not in err

    with out.with_suffix(".records.csv").open() as fh:
        records = list(csv.DictReader(fh))
    assert len(records) == 14
    for i, rec in enumerate(sorted(records, key=lambda r: int(r["index"]))):
        kind = KINDS[i % len(KINDS)]
        assert (EXPECTED[kind] or CUT[transport]) in rec["error"], (kind, rec["error"])
        assert len(rec["error"]) < 400
    # Two answers offered 256 MiB each and two never ended: the client kept none of it.
    assert peak < 700 * MIB, f"tune bench peaked at {peak // MIB} MiB"
    assert time.monotonic() - t0 < 120
