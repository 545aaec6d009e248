"""The quality check of lossy knobs, made on the engine a trial already runs (no new start).

The reference: right after its engine is ready, the defaults trial answers the check's fixed
prompts greedily (:meth:`Measurer.greedy`, a few seconds), and the answers are stored in the
study's storage, so that every worker, on any host, compares with the same ones (when the
defaults do not answer, the first trial whose lossy knobs are all at their defaults records
them instead). A trial that sets a lossy knob away from its default and met the SLOs answers
the same prompts at its end, before its engine is stopped; its answers are compared with the
reference's (:func:`tuner.metrics.token_agreement.agreement`), and below the workload's
``quality.min_token_agreement`` (or with no reference to compare with: the check fails
closed) the trial is ``quality_failed``, told to Optuna as infeasible. A trial that finishes
while the defaults trial is still running elsewhere waits for its answers. Each comparison
(prompts, both answers, figures) is kept in the run folder's ``quality/``.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState
from pydantic import BaseModel

from tuner.core import EndpointError
from tuner.engines import Device, EngineSpec
from tuner.launch import EngineHandle
from tuner.loadgen import NULL_PROGRESS, Progress
from tuner.metrics import GreedyAnswer, QualityVerdict, agreement
from tuner.study.coordination import fail_stale
from tuner.study.measurer import Measurer
from tuner.workload import QualityCheck

log = logging.getLogger(__name__)

REFERENCE_ATTR = "tuner.quality_reference"
"""The study's user attribute holding the reference answers."""


class QualityReference(BaseModel):
    """The answers every lossy configuration of a study is compared with."""

    trial: int
    defaults: bool
    max_tokens: int
    answers: list[GreedyAnswer]


@dataclass
class QualityGuard:
    """One study's quality check (its workload's ``quality``), shared by its trials."""

    check: QualityCheck
    spec: EngineSpec
    device: Device
    study: optuna.Study
    folder: Path
    progress: Progress = NULL_PROGRESS
    poll_s: float = 2.0

    def lossy(self, config: dict[str, Any], *, defaults: bool) -> dict[str, Any]:
        """The lossy knobs ``config`` sets away from their defaults (none for the defaults)."""
        return {} if defaults else self.spec.lossy_changes(config, self.device)

    def reference(self) -> QualityReference | None:
        data = self.study.user_attrs.get(REFERENCE_ATTR)
        if data is None:
            return None
        ref = QualityReference.model_validate(data)
        return ref if ref.max_tokens == self.check.max_tokens else None

    def record_reference(self, measurer: Measurer, handle: EngineHandle, number: int, *,
                         defaults: bool) -> None:
        """On a ready engine of a configuration with no lossy change: store its answers as the
        study's reference, unless there is one (the defaults' replace another trial's). A
        failure is logged; the trial goes on."""
        have = self.reference()
        if have is not None and (have.defaults or not defaults):
            return
        self.progress.status("phase", "quality check: the reference's greedy answers")
        try:
            answers = measurer.greedy(handle, self.check.max_tokens)
        except EndpointError as exc:
            log.warning("trial %d recorded no reference answers for the quality check: %s",
                        number, exc)
            return
        ref = QualityReference(trial=number, defaults=defaults,
                               max_tokens=self.check.max_tokens, answers=answers)
        self.study.set_user_attr(REFERENCE_ATTR, ref.model_dump(mode="json"))
        self._keep("reference.json", ref.model_dump(mode="json"))

    def judge(self, measurer: Measurer, handle: EngineHandle, tag: str,
              lossy: dict[str, Any]) -> QualityVerdict:
        """On the running engine of a configuration with lossy changes: its answers against
        the reference's."""
        t0 = time.monotonic()
        verdict = QualityVerdict(lossy=lossy,
                                 min_token_agreement=self.check.min_token_agreement)
        ref = self._wait_reference(handle)
        if ref is None:
            verdict.detail = "no reference: the defaults' greedy answers were not recorded"
        else:
            verdict.reference_trial = ref.trial
            self.progress.status("phase", "quality check: greedy answers")
            try:
                answers = measurer.greedy(handle, self.check.max_tokens)
                verdict.agreement = agreement(ref.answers, answers)
                verdict.answers_path = self._keep(f"{tag}.json", {
                    "reference_trial": ref.trial, "lossy": lossy,
                    "agreement": verdict.agreement.model_dump(mode="json"),
                    "answers": [{"prompt": r.prompt, "reference": r.text, "answer": a.text}
                                for r, a in zip(ref.answers, answers, strict=True)]})
            except (EndpointError, ValueError) as exc:
                verdict.detail = str(exc)
        verdict.seconds = time.monotonic() - t0
        return verdict

    def _wait_reference(self, handle: EngineHandle) -> QualityReference | None:
        """The reference, once a defaults trial running elsewhere has recorded it (a trial
        whose worker died is failed by its heartbeat: then there is nothing to wait for)."""
        while True:
            ref = self.reference()
            if ref is not None or handle.exit_code() is not None or not self._pending():
                return ref
            self.progress.status("phase", "quality check: waiting for the defaults' answers")
            time.sleep(self.poll_s)

    def _pending(self) -> bool:
        fail_stale(self.study)
        return any(t.user_attrs.get("defaults") for t in self.study.get_trials(
            deepcopy=False, states=(TrialState.RUNNING,)))

    def _keep(self, name: str, data: dict[str, Any]) -> str:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / name
        path.write_text(json.dumps(data, indent=2) + "\n")
        return str(path)
