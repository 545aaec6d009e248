"""A fake launcher and measurer for unit tests at the launcher and measurer seams.

The fake engine is a state machine with a log file: it can fail to start, exit before it is
ready (with an OOM or invalid-config line in its log), crash under load, or serve. It proves
nothing about engines; it lets unit tests drive every outcome path of the study loop.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Literal

from tests.unit.fakes.summaries import fake_summary
from tuner.core import EndpointError, EngineCrashed, EngineStartError
from tuner.engines import Rendered
from tuner.launch import EngineHandle, LaunchRequest
from tuner.loadgen import RequestRecord
from tuner.measurement import PROMPTS, CapacityResult, estimate
from tuner.metrics import GreedyAnswer, RunSummary

Behaviour = Literal["serve", "refuse_start", "exit_before_ready", "oom_at_start",
                    "crash_under_load", "probe_fails", "slo_infeasible", "measure_raises"]


class FakeHandle(EngineHandle):
    def __init__(self, request: LaunchRequest, behaviour: Behaviour, launcher: FakeLauncher
                 ) -> None:
        self.request = request
        self.behaviour = behaviour
        self.base_url = "http://127.0.0.1:9"
        self.log_path = request.log_path
        self.rendered = Rendered(argv=["fake-engine", *map(str, request.config.values())])
        # The engine's environment (the rendered one and the secrets), and what it prints when
        # it is asked to stop.
        self.env = {**self.rendered.env, **{k: v.get_secret_value()
                                            for k, v in request.secret_env.items()}}
        self.last_words: str | None = None
        self._code: int | None = None
        self._launcher = launcher
        self.stops = 0
        request.log_path.parent.mkdir(parents=True, exist_ok=True)
        request.log_path.write_text("fake engine starting\n")

    def exit_code(self) -> int | None:
        return self._code

    def say(self, line: str) -> None:
        with self.log_path.open("a") as fh:
            fh.write(line + "\n")

    def die(self, code: int, line: str) -> None:
        self.say(line)
        self._code = code

    def kill(self) -> None:
        """SIGKILL: the engine ends without a word."""
        self._code = -9

    def stop(self, grace_s: float = 20.0) -> None:
        self.stops += 1
        if self._code is None:
            if self.last_words is not None:
                self.say(self.last_words)
            self._code = -15
        self._launcher.running.discard(self)


@dataclass
class FakeLauncher:
    """Starts fake engines; ``behaviour`` per trial tag (``trial-003``) or for all."""

    behaviour: Behaviour = "serve"
    by_tag: dict[str, Behaviour] = field(default_factory=dict)
    name: str = "fake"
    started: list[FakeHandle] = field(default_factory=list)
    running: set[FakeHandle] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, request: LaunchRequest) -> FakeHandle:
        tag = request.labels.get("tuner.trial", "")
        behaviour = self.by_tag.get(tag, self.behaviour)
        if behaviour == "refuse_start":
            raise EngineStartError("docker could not start image: no such runtime",
                                   outcome="invalid_config", exit_code=None,
                                   log_tail="no such runtime")
        handle = FakeHandle(request, behaviour, self)
        with self.lock:
            self.started.append(handle)
            self.running.add(handle)
        return handle

    def cleanup_orphans(self) -> list[str]:
        return []

    def cleanup_own(self) -> list[str]:
        with self.lock:
            left = list(self.running)
        for handle in left:
            handle.stop()
        return [f"fake {h.log_path.name}" for h in left]


def summary(load: float, *, passed: bool, cost: float = 1.0) -> RunSummary:
    return fake_summary(load, passed).model_copy(
        update={"cost_per_m_output_tokens": cost if passed else None})


def records(n: int = 3, tokens: int = 10) -> list[RequestRecord]:
    return [RequestRecord(index=i, class_name="c", prefix_group=None, input_tokens=8,
                          planned_output_tokens=tokens, scheduled_ns=i * 10**8,
                          sent_ns=i * 10**8, first_token_ns=i * 10**8 + 10**7,
                          done_ns=i * 10**8 + 10**8, chunk_ns=[i * 10**8 + 10**7],
                          chunk_tokens=[tokens], output_tokens=tokens) for i in range(n)]


@dataclass
class FakeMeasurer:
    """Readiness and measurement of fake engines, following each handle's behaviour. Greedy
    answers are the same for every configuration except those whose knobs hold a value of
    ``diverge``: their answers differ from the token it names on."""

    cost: float = 1.0
    capacity_calls: int = 0
    diverge: dict[str, int] = field(default_factory=dict)
    greedy_calls: list[str] = field(default_factory=list)

    def wait_ready(self, handle: EngineHandle) -> float:
        assert isinstance(handle, FakeHandle)
        if handle.behaviour == "exit_before_ready":
            handle.die(2, "error: argument --max-num-seqs: invalid int value: 'x'")
            raise EngineStartError("engine exited with code 2 before it was ready",
                                   outcome="invalid_config", exit_code=2,
                                   log_tail=handle.log_tail())
        if handle.behaviour == "oom_at_start":
            raise EngineStartError("engine ran out of memory while starting: CUDA out of "
                                   "memory", outcome="oom", exit_code=None,
                                   log_tail=handle.log_tail())
        return 0.01

    def _serve(self, handle: EngineHandle) -> None:
        assert isinstance(handle, FakeHandle)
        if handle.behaviour == "probe_fails":
            raise EndpointError(f"{handle.base_url} does not serve model 'm'; it serves x")
        if handle.behaviour == "crash_under_load":
            handle.die(139, "Segmentation fault")
            raise EngineCrashed("engine exited with code 139")
        if handle.behaviour == "measure_raises":
            raise RuntimeError("the harness broke")

    def capacity(self, handle: EngineHandle, accelerators: int
                 ) -> tuple[CapacityResult, list[RequestRecord]]:
        self.capacity_calls += 1
        self._serve(handle)
        assert isinstance(handle, FakeHandle)
        if handle.behaviour == "slo_infeasible":
            step = summary(1.0, passed=False)
            return CapacityResult(steps=[step], best=None, lowest_failing_load=1.0,
                                  stopped_by="min_load"), records()
        cost = self.cost + sum(hash(str(v)) % 7 for v in handle.request.config.values()) / 10
        best, fail = summary(2.0, passed=True, cost=cost), summary(2.1, passed=False)
        return CapacityResult(steps=[best, fail], best=best, lowest_failing_load=2.1,
                              stopped_by="resolved",
                              estimate=estimate([best, fail], best, 2.1)), records()

    def greedy(self, handle: EngineHandle, max_tokens: int) -> list[GreedyAnswer]:
        assert isinstance(handle, FakeHandle)
        self.greedy_calls.append(handle.request.labels.get("tuner.trial", ""))
        if handle.exit_code() is not None:  # as the HTTP measurer finds an engine that is gone
            raise EndpointError(f"cannot reach {handle.base_url}: connection refused")
        self._serve(handle)
        at = min((self.diverge[str(v)] for v in handle.request.config.values()
                  if str(v) in self.diverge), default=max_tokens)
        answers = []
        for prompt in PROMPTS:
            tokens = [f" w{i}" if i < at else " other" for i in range(max_tokens)]
            ids = [i if i < at else -1 for i in range(max_tokens)]
            logprobs = [-0.5 if i < at else -0.9 for i in range(max_tokens)]
            answers.append(GreedyAnswer(prompt=prompt, text="".join(tokens), text_tokens=ids,
                                        tokens=tokens, logprobs=logprobs))
        return answers
