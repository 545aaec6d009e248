"""The face of tuner.loadgen: what other packages use of it; the rest is private."""

from tuner.loadgen.chunk_spill import ChunkSpill
from tuner.loadgen.client import Api, Reading, ServerCaps, StreamClient, request_body
from tuner.loadgen.event_loop import run as run_loop
from tuner.loadgen.probe import check_serves, normalise_endpoint, probe_endpoint
from tuner.loadgen.progress import NULL_PROGRESS, NullProgress, Progress, RunProgress
from tuner.loadgen.records import RequestRecord, read_records_csv, write_records_csv
from tuner.loadgen.route import DIRECT, Route, redact, route_for
from tuner.loadgen.runner import MAX_POOL, Runner, RunOutcome, StopCheck
from tuner.loadgen.schedule import PREWAKE_NS, sleep_until
from tuner.loadgen.scraper import COUNTERS, GAUGES, ServerMetrics, wait_idle

__all__ = [
    "Api", "COUNTERS", "ChunkSpill", "DIRECT", "GAUGES", "MAX_POOL", "NULL_PROGRESS",
    "NullProgress", "PREWAKE_NS", "Progress", "Reading", "RequestRecord", "Route",
    "RunOutcome", "RunProgress", "Runner", "ServerCaps", "ServerMetrics", "StopCheck",
    "StreamClient", "check_serves", "normalise_endpoint", "probe_endpoint", "read_records_csv",
    "redact", "request_body", "route_for", "run_loop", "sleep_until", "wait_idle",
    "write_records_csv",
]
