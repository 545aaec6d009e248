"""The face of tuner.workload: what other packages use of it; the rest is private."""

from tuner.workload.arrivals import NS, ConcurrencyArrivals
from tuner.workload.fit_workload import FittedPart, fit_workload
from tuner.workload.lengths import LengthDist
from tuner.workload.loader import load_workload, workload_sha256
from tuner.workload.models import (
    CapacitySearch,
    Cost,
    EngineWarmup,
    QualityCheck,
    Slo,
    SloBounds,
    Stop,
    Workload,
)
from tuner.workload.plan import (
    PlannedRequest,
    RequestFactory,
    is_warmup,
    open_loop_plan,
    plan_notes,
    send_offsets_ns,
)
from tuner.workload.plausibility import implausible, implausible_run
from tuner.workload.prefix_share import own_prefix_share
from tuner.workload.prompts import PromptSynth
from tuner.workload.request_log import read_request_log
from tuner.workload.tokenizer import given_tokenizer_file, load_tokenizer

__all__ = [
    "CapacitySearch", "ConcurrencyArrivals", "Cost", "EngineWarmup", "FittedPart",
    "LengthDist", "NS", "PlannedRequest", "PromptSynth", "QualityCheck", "RequestFactory",
    "Slo", "SloBounds", "Stop", "Workload", "fit_workload", "given_tokenizer_file", "implausible",
    "implausible_run", "is_warmup", "load_tokenizer", "load_workload", "open_loop_plan",
    "own_prefix_share", "plan_notes", "read_request_log", "send_offsets_ns", "workload_sha256",
]
