"""The workload file: what traffic to replay and what the serving team is judged on.

A workload is YAML validated by these models (unknown keys are errors). Paths
inside it (empirical length files, traces, the tokenizer) are relative to the
workload file; :func:`tuner.workload.loader.load_workload` resolves them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationInfo, create_model, field_validator, model_validator

from tuner.core import RESOLUTION, StrictModel
from tuner.metric_registry import SLO_METRICS, Metric, SloBound
from tuner.workload.arrivals import ArrivalProcess, TraceArrivals
from tuner.workload.lengths import LengthDist
from tuner.workload.paths import beside_workload
from tuner.workload.tokenizer import given_tokenizer_file


class Conversation(StrictModel):
    """A class whose requests are the turns of conversations (chat, agent loops).

    A session has ``turns`` turns; each turn's prompt is the system prompt (``system_tokens``,
    the same text for every session of the class), every earlier turn's user message and
    answer, and the new user message (the class's ``input``); its answer is the class's
    ``output``. Sessions start by the workload's arrival process; turn k+1 is sent
    ``think_ms`` after turn k was sent (the schedule is fixed in advance, so give think times
    longer than a turn takes to serve).
    """

    turns: LengthDist = Field(description="turns per session")
    think_ms: LengthDist = Field(description="milliseconds from one turn's send to the next's")
    system_tokens: int = Field(default=0, ge=0, le=1_000_000, description="a system prompt "
                               "shared by every session of the class (0: none)")


class RequestClass(StrictModel):
    """One kind of request in the mix, with its own input and output lengths."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    weight: float = Field(gt=0, description="relative share of requests (normalised over "
                          "classes; of sessions when a class is a conversation)")
    input: LengthDist = Field(description="prompt tokens (excluding any shared prefix); of a "
                              "conversation: each turn's new user message")
    output: LengthDist = Field(description="output tokens")
    session: Conversation | None = Field(default=None, description="the class is made of "
                                         "conversations")


class SharedPrefixes(StrictModel):
    """Shared prompt prefixes, as agent loops, few-shot prompts and document QA produce.

    A request that carries a prefix starts with one of ``groups`` fixed prefixes of ``tokens``
    tokens; its own input (from its class) follows. ``share`` of requests carry one.
    """

    groups: int = Field(ge=1, le=100_000)
    tokens: int = Field(ge=1, le=1_000_000)
    share: float = Field(ge=0, le=1, description="fraction of requests that carry a prefix")


class Stop(StrictModel):
    """When a run ends: after ``requests`` requests or ``duration_s`` seconds, whichever first."""

    requests: int | None = Field(default=None, ge=1, le=10_000_000)
    duration_s: float | None = Field(default=None, gt=0, le=7 * 24 * 3600)

    @model_validator(mode="after")
    def _one_given(self) -> Stop:
        if self.requests is None and self.duration_s is None:
            raise ValueError("give `requests` or `duration_s` (or both)")
        return self


class EngineWarmup(StrictModel):
    """Warming a freshly started engine on the workload's own mix before it is measured:
    rounds of requests at the capacity search's first load until the rounds' median TTFT and
    median TPOT (per request: time after the first token over the tokens after it) stop moving
    (each within ``tolerance`` of the round before), bounded in time."""

    enabled: bool = True
    round_requests: int = Field(default=12, ge=2, description="requests per round")
    tolerance: float = Field(default=0.25, gt=0, lt=1, description="relative change of the "
                             "rounds' medians that counts as stable")
    min_rounds: int = Field(default=2, ge=2)
    max_s: float = Field(default=90.0, gt=0, description="give up waiting for stability then "
                         "(the measurement goes on; the record says it was not stable)")
    ramp_s: float = Field(default=2.0, ge=0, description="seconds of each ramp round: before "
                          "the rounds above, the load doubles from the first one each round; "
                          "a round that fails the SLOs is repeated at its load while it gets "
                          "faster (by more than tolerance), and the ramp ends at a failing "
                          "round that does not, so that the engine has met its large batches "
                          "and left its slow phase before a step is measured (0: no ramp)")
    ramp_rounds: int = Field(default=16, ge=1, le=40, description="the most ramp rounds")


class Warmup(StrictModel):
    """Requests at the start of each run that are sent but left out of every figure, and the
    warm-up of each fresh engine start."""

    requests: int = Field(default=0, ge=0)
    duration_s: float = Field(default=0.0, ge=0)
    engine: EngineWarmup = EngineWarmup()


class SloBounds(StrictModel):
    """Service-level objectives; a run passes when every one holds. The fields are the bounds
    the metric registry declares (:data:`tuner.metric_registry.SLO_METRICS`)."""

    def bound(self, metric: Metric) -> float | None:
        """This workload's bound on ``metric`` (None: not bounded)."""
        if metric.slo is None:
            return None
        value = getattr(self, metric.slo.field)
        return None if value is None else float(value)

    def required(self, metric: Metric) -> float:
        """The bound on a metric every workload bounds."""
        value = self.bound(metric)
        assert value is not None, f"{metric.key} is not bounded"
        return value

    def bounds(self) -> dict[Metric, float]:
        """Every bound this workload sets, in the registry's order."""
        return {m: b for m in SLO_METRICS if (b := self.bound(m)) is not None}


def _bound_field(b: SloBound) -> Any:
    limits: dict[str, float] = {"ge": 0} if b.zero_allowed else {"gt": 0}
    if b.at_most is not None:
        limits["le"] = b.at_most
    if b.default == "required":
        return (float, Field(description=b.description, **limits))  # type: ignore[call-overload]
    kind = float if b.default is not None else float | None
    return (kind, Field(default=b.default, description=b.description,  # type: ignore[call-overload]
                        **limits))


if TYPE_CHECKING:
    Slo = SloBounds
else:
    Slo = create_model("Slo", __base__=SloBounds, __module__=__name__,
                       __doc__=SloBounds.__doc__,
                       **{m.slo.field: _bound_field(m.slo) for m in SLO_METRICS})


class Cost(StrictModel):
    """Price of the hardware the engine runs on."""

    usd_per_hour: float = Field(gt=0, description="price per hour of one accelerator (or host)")
    per_accelerator: bool = Field(
        default=True,
        description="multiply by the accelerators a configuration uses (tensor x pipeline x data)",
    )

    def usd_per_hour_for(self, accelerators: int) -> float:
        """What an hour of a configuration using ``accelerators`` costs."""
        return self.usd_per_hour * (accelerators if self.per_accelerator else 1)


class CapacitySearch(StrictModel):
    """How the capacity search finds the highest load within the SLOs: it brackets, then
    measures where the capacity's interval narrows most, until the interval is within
    ``resolution`` (see :mod:`tuner.measurement.curve_search`)."""

    start: float | None = Field(default=None, gt=0, description="first load; default: the "
                                "workload's own rate or concurrency")
    max_load: float = Field(default=1000.0, gt=0)
    min_load: float = Field(default=0.05, gt=0)
    resolution: float | None = Field(default=None, gt=0, lt=0.5, description="stop when the "
                                     "capacity's 95% interval is within this of it on both "
                                     "sides (relative half-width); default 0.05, or tolerance "
                                     "/ 2 where a tolerance is given")
    tolerance: float = Field(default=0.1, gt=0, lt=1, description="earlier name: the width "
                             "(high - low) / low the bracket is narrowed to; resolution = "
                             "tolerance / 2")
    max_steps: int = Field(default=12, ge=1, le=100, description="the most steps a search "
                           "takes (a dozen resolve a capacity to ±5% in most searches: "
                           "experiments/verdicts)")
    max_time_s: float = Field(default=600.0, gt=0)
    step_duration_s: float | None = Field(default=None, gt=0, description="least duration of "
                                          "each step; default: the workload's stop")
    min_requests: int = Field(default=60, ge=1, description="measured requests a step needs at "
                              "least (open loop: the step lasts long enough to send them); 59 "
                              "give a p95 a 95% upper bound within the sample")
    max_step_s: float = Field(default=120.0, gt=0, description="the longest a step may last "
                              "to reach min_requests")
    confirm_failures: bool = Field(default=True, description="no longer used: every step "
                                   "counts, and a load measured twice counts with all its "
                                   "requests (kept so that earlier workloads load)")
    keep_up_tolerance: float = Field(default=0.1, gt=0, lt=1, description="a step passes only "
                                     "if the engine delivered at least (1 - this) of the "
                                     "offered output tokens over its steady window")

    def search_resolution(self) -> float:
        """The relative half-width the search stops at."""
        if self.resolution is not None:
            return self.resolution
        return self.tolerance / 2 if "tolerance" in self.model_fields_set else RESOLUTION


class QualityCheck(StrictModel):
    """The guardrail on lossy knobs (quantisation, a quantised KV cache, speculative decoding):
    a configuration that sets one away from the engine's default can win only if, on the
    engine it was measured on, its greedy answers to a fixed set of prompts agree with the
    defaults' answers (recorded once per study) on at least ``min_token_agreement`` of their
    tokens, counted up to each answer's first differing token. Below it the trial is
    infeasible (``quality_failed``)."""

    min_token_agreement: float = Field(default=0.95, ge=0, le=1, description="least mean "
                                       "share of each answer's tokens before its first "
                                       "difference from the defaults' answer")
    max_tokens: int = Field(default=64, ge=1, le=4096, description="tokens each greedy answer "
                            "may take")


class Workload(StrictModel):
    """A traffic shape with its SLOs and the price of the hardware serving it."""

    name: str = Field(default="workload", min_length=1)
    model: str = Field(min_length=1, description="model name sent in each request")
    tokenizer: Path | None = Field(
        default=None, description="folder with tokenizer.json; default: the model folder or the "
        "local Hugging Face cache entry for `model`"
    )
    api: Literal["completions", "chat"] = "completions"
    classes: tuple[RequestClass, ...] = Field(default=(), description="the request mix")
    prefix: SharedPrefixes | None = None
    arrival: ArrivalProcess
    stop: Stop
    warmup: Warmup = Warmup()
    seed: int = Field(default=0, ge=0)
    slo: Slo
    cost: Cost
    capacity: CapacitySearch = CapacitySearch()
    request_timeout_s: float = Field(default=300.0, gt=0, description="the most one request "
                                     "may take, first byte to last; past it, it is an error")
    hang_timeout_s: float = Field(default=60.0, gt=0, description="tune: an engine whose "
                                  "requests bring no token and whose health check does not "
                                  "answer for this long is hung; its trial ends `hung` and it "
                                  "is killed")
    temperature: float = Field(default=0.0, ge=0)
    quality: QualityCheck | None = Field(default=None, description="compare the greedy "
                                         "answers of configurations that change lossy knobs "
                                         "with the defaults' (absent: not compared)")

    @field_validator("tokenizer")
    @classmethod
    def _resolve(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if value is None:
            return None
        path = beside_workload(value, info)
        if given_tokenizer_file(path) is None:
            raise ValueError(f"no tokenizer.json at {path}; give the folder that holds it "
                             "(relative to the workload file), or leave `tokenizer` out")
        return path

    @model_validator(mode="after")
    def _mix(self) -> Workload:
        if not self.classes and not isinstance(self.arrival, TraceArrivals):
            raise ValueError("`classes` needs at least one request class (only a trace arrival "
                             "carries its own lengths)")
        names = [c.name for c in self.classes]
        if len(set(names)) != len(names):
            raise ValueError(f"class names must be unique, got {names}")
        if self.has_sessions and (self.arrival.closed_loop
                                  or isinstance(self.arrival, TraceArrivals)):
            raise ValueError("conversations (`classes[].session`) need an open-loop arrival "
                             "process for their sessions: poisson, gamma or constant")
        if self.has_sessions and self.prefix is not None:
            raise ValueError("`prefix` does not combine with conversations; give the shared "
                             "part as `classes[].session.system_tokens`")
        return self

    @property
    def has_sessions(self) -> bool:
        """Whether some class is made of conversations (the plan is then one of sessions)."""
        return any(c.session is not None for c in self.classes)

    @property
    def load_unit(self) -> str:
        """What a load of this workload counts: requests per second, sessions per second
        (conversations start at the rate) or concurrent requests."""
        if self.has_sessions:
            return "sessions/s"
        return self.arrival.unit

    def max_request_tokens(self) -> int:
        """The longest request the workload can send: prompt (with prefix) plus output."""
        prefix = self.prefix.tokens if self.prefix is not None else 0
        if isinstance(self.arrival, TraceArrivals):
            longest = max(e.input_tokens + e.output_tokens for e in self.arrival.entries)
        else:
            longest = max(_longest(c) for c in self.classes)
        return longest + prefix

    def slo_bounds_ns(self) -> dict[Metric, float]:
        """The bounds a request is judged on for goodput, in ns (a latency's in ms)."""
        return {m: b * 1e6 for m, b in self.slo.bounds().items()
                if m.slo is not None and m.slo.per_request is not None}


def _longest(cls: RequestClass) -> int:
    """The longest request of a class: prompt plus output (of a conversation: its last turn,
    which carries every earlier turn)."""
    turn = cls.input.bounds()[1] + cls.output.bounds()[1]
    if cls.session is None:
        return turn
    return cls.session.system_tokens + cls.session.turns.bounds()[1] * turn
