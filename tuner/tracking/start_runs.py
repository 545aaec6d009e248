"""The fresh starts of a study's re-measurement as MLflow child runs, each once.

After the search, the leaders and the defaults are started again in pairs (repeat by repeat,
interleaved); the verdict comes from those starts only. Each start is a child run of the
study's parent, named by its trial, start and pair (``trial-003 start 1 pair 1 ok $0.0124/M``)
and tagged ``tuner.role=start``, ``tuner.trial``, ``tuner.start`` and ``tuner.pair``, with its
capacity (``max_load``, or ``max_load_at_least`` when nothing failed), its cost at that
capacity and its records. A start already logged and finished is not logged again; one left
unfinished by a broken-off delivery is deleted first.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from tuner.metric_registry import METRICS
from tuner.metrics import cost_per_million, money
from tuner.study.repeats import MeasuredRun
from tuner.tracking.delivery import deliver_once, logged_runs

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient


def start_key(run: MeasuredRun) -> tuple[str, str, str]:
    return run.engine, str(run.trial), str(run.repeat)


def start_cost(run: MeasuredRun) -> float | None:
    """The start's cost per million output tokens at its capacity (None: it met no SLO)."""
    if run.failure is not None or run.summary is None:
        return None
    return cost_per_million(run.usd_per_hour, run.summary.output_token_throughput * run.scale)


def start_run_name(run: MeasuredRun) -> str:
    """``trial-003 start 1 pair 1 ok $0.0124/M`` (the pair is the repeat it ran in)."""
    name = (f"trial-{run.trial:03d} start {run.repeat} pair {run.repeat} "
            f"{'ok' if run.failure is None else 'failed'}")
    cost = start_cost(run)
    return f"{name} {money(cost)}/M" if cost is not None else name


def start_metrics(run: MeasuredRun) -> dict[str, float]:
    m: dict[str, float] = {}
    if run.load > 0:  # a lower bound is not the capacity: its own key
        m["max_load_at_least" if run.bound else "max_load"] = run.load
    cost = start_cost(run)
    if cost is not None:
        m["cost_per_m_output_tokens"] = cost
    if run.summary is not None:
        for metric in METRICS:
            value = metric.value(run.summary)
            if metric.tracked and value is not None:
                m[metric.key] = value
    return m


def record_start(client: MlflowClient, experiment_id: str, parent_id: str,
                 run: MeasuredRun) -> None:
    """Log one start now (raises when MLflow fails)."""
    import time

    from mlflow.entities import Metric, Param

    engine, trial, repeat = start_key(run)
    tags = {"mlflow.parentRunId": parent_id, "tuner.role": "start", "tuner.engine": engine,
            "tuner.trial": trial, "tuner.start": repeat, "tuner.pair": repeat,
            "tuner.defaults": str(run.defaults).lower()}
    made = client.create_run(experiment_id, run_name=start_run_name(run), tags=tags)
    rid = made.info.run_id
    now = int(time.time() * 1000)
    params = [Param("failure", run.failure[:500])] if run.failure else []
    if run.binding:
        params.append(Param("binding", run.binding))
    client.log_batch(rid, metrics=[Metric(k, float(v), now, 0)
                                   for k, v in start_metrics(run).items()], params=params)
    if run.records_path and Path(run.records_path).is_file():
        client.log_artifact(rid, run.records_path, "records")
    client.set_terminated(rid, "FINISHED" if run.failure is None else "FAILED")


def deliver_starts(client: MlflowClient, experiment_id: str, parent_id: str,
                   starts: Sequence[MeasuredRun]) -> int:
    """Log the starts MLflow does not have finished under ``parent_id``, each once
    (:func:`~tuner.tracking.delivery.deliver_once`); how many were logged now."""
    if not starts:
        return 0

    def key(tags: dict[str, str]) -> tuple[str, str, str]:
        return tags.get("tuner.engine", ""), tags.get("tuner.trial", ""), tags.get(
            "tuner.start", "")

    logged = logged_runs(client, experiment_id, parent_id, "start", key)
    done: set[tuple[str, str, str]] = set()
    count = 0
    for run in starts:
        k = start_key(run)
        if k in done:  # a start given twice is logged once
            continue
        done.add(k)
        count += deliver_once(client, logged.get(k, []), partial(
            record_start, client, experiment_id, parent_id, run))
    return count
