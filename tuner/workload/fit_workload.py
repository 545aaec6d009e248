"""A workload fitted to a request log, with a report of how well each part fits.

Fitted: request classes (clusters of ln input length), each class's input and output length
distributions (:mod:`tuner.workload.fit_dists`), the arrival process and its rate, shared
prefixes (Mooncake ``hash_ids`` or a prefix-hash column) and sessions (a session column or
field: one conversation class with its turns, think times and new-message lengths). What a
log cannot tell (SLOs, price, a prefix's length when only its hash is logged) is listed as
not fitted; SLOs and price get placeholders to edit.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tuner.workload.fit_dists import LengthFit, fit_arrivals, fit_lengths, split_classes
from tuner.workload.prefix_blocks import BlockLayout, prefix_reuse_ratio
from tuner.workload.request_log import LoggedRequest, RequestLog

MOONCAKE_BLOCK = 512


@dataclass(frozen=True, slots=True)
class FittedPart:
    """One fitted distribution: its label, the observed values and the LengthDist mapping."""

    label: str
    observed: np.ndarray
    spec: dict[str, Any]


@dataclass
class FittedWorkload:
    """The workload mapping (YAML-ready), the length files its empirical distributions name
    (file name -> lengths), every fitted length distribution, the report's lines and what
    could not be fitted."""

    workload: dict[str, Any]
    empirical: dict[str, np.ndarray] = field(default_factory=dict)
    parts: list[FittedPart] = field(default_factory=list)
    report: list[str] = field(default_factory=list)
    not_fitted: list[str] = field(default_factory=list)

    def length(self, values: np.ndarray, file_stem: str, label: str) -> dict[str, Any]:
        """Fit ``values``, note it in the report and return its LengthDist mapping."""
        fit = fit_lengths(values)
        spec = dict(fit.spec)
        if fit.empirical:
            spec["file"] = f"{file_stem}.txt"
            self.empirical[spec["file"]] = values
            self.not_fitted.append(f"{label}: no family within the KS limit "
                                   f"({_tried(fit)}); replayed from {spec['file']}")
        self.report.append(f"| {label} | {_describe(spec)} | {_ks(fit)} | {len(values)} | "
                           f"{_quantiles(values)} |")
        self.parts.append(FittedPart(label, values, spec))
        return spec


def _tried(fit: LengthFit) -> str:
    return ", ".join(f"{k} {v:.3f}" for k, v in sorted(fit.tried.items(), key=lambda x: x[1]))


def _ks(fit: LengthFit) -> str:
    return "-" if fit.empirical else f"{fit.ks:.3f}"


def _describe(spec: dict[str, Any]) -> str:
    kind = spec.get("dist", spec.get("process", ""))
    rest = " ".join(f"{k}={v}" for k, v in spec.items() if k not in ("dist", "process"))
    return f"{kind} {rest}".strip()


def _quantiles(values: np.ndarray) -> str:
    q = np.percentile(values, [10, 50, 90, 99])
    return " / ".join(f"{v:.0f}" for v in q)


def _shared_prefixes(requests: tuple[LoggedRequest, ...]) -> tuple[list[int], list[object]]:
    """Per request: the tokens of its prefix shared with another request (0: none) and the
    key of its prefix group (None: none). Of a Mooncake trace: its leading blocks that some
    other request holds too."""
    tokens: list[int] = []
    keys: list[object] = []
    if any(r.hash_ids for r in requests):
        uses = Counter(block for r in requests for block in set(r.hash_ids))
        for r in requests:
            k = 0
            while k < len(r.hash_ids) and uses[r.hash_ids[k]] > 1:
                k += 1
            tokens.append(min(k * MOONCAKE_BLOCK, r.input_tokens - 1))
            keys.append(r.hash_ids[0] if k else None)
        return tokens, keys
    counts = Counter(r.prefix_hash for r in requests if r.prefix_hash)
    for r in requests:
        shared = r.prefix_hash is not None and counts[r.prefix_hash] > 1
        keys.append(r.prefix_hash if shared else None)
        tokens.append(min(r.prefix_tokens or 0, r.input_tokens - 1) if shared else 0)
    return tokens, keys


def fit_workload(log: RequestLog, *, source: str, model: str, stem: str,
                 rate: str = "mean") -> FittedWorkload:
    """Fit a workload to ``log``; ``stem`` names the empirical length files."""
    reqs = log.requests
    times = np.array([r.time_s for r in reqs])
    fitted = FittedWorkload({})
    fitted.report += [f"# Workload fitted from {source}", "",
                      f"{len(reqs)} requests ({log.format} format) over "
                      f"{times[-1] - times[0]:.1f} s.", "",
                      "| part | fitted | KS | n | observed p10 / p50 / p90 / p99 |",
                      "|---|---|---|---|---|"]
    prefix_tokens, keys = _shared_prefixes(reqs)
    sharers = [i for i, k in enumerate(keys) if k is not None]
    prefix: dict[str, Any] | None = None
    known = [prefix_tokens[i] for i in sharers if prefix_tokens[i] > 0]
    if sharers and known:
        prefix = {"groups": len({keys[i] for i in sharers}),
                  "tokens": int(np.median(known)), "share": round(len(sharers) / len(reqs), 4)}
        low, high = np.percentile(known, [10, 90])
        if high > 1.5 * low:
            fitted.not_fitted.append(
                f"prefix length: shared prefixes run from {low:.0f} to {high:.0f} tokens "
                f"(p10-p90); the workload gives every group {prefix['tokens']} (replay the log "
                "as a trace for its exact sharing)")
    elif sharers:
        fitted.not_fitted.append(f"prefix: {len(sharers)} requests share a prefix hash but the "
                                 "log gives no prefix length (add a prefix_tokens column)")
    # a request replays as the fitted prefix plus its own tokens: keep its total length
    fitted_prefix = 0 if prefix is None else int(prefix["tokens"])
    own = np.array([max(1, r.input_tokens - (fitted_prefix if k is not None else 0))
                    for r, k in zip(reqs, keys, strict=True)])
    outputs = np.array([r.output_tokens for r in reqs])
    sessions = [r.session for r in reqs]
    if any(s is not None for s in sessions):
        classes, starts = _conversation(fitted, reqs, own, prefix)
        prefix = None  # a conversation's shared part is its system prompt
    else:
        label = "input" if prefix is None else "input after the prefix"
        classes, starts = _length_classes(fitted, own, outputs, label), times
    arrival = fit_arrivals(starts, rate=rate)
    fitted.report.append(f"| arrivals ({'sessions' if len(starts) != len(times) else 'requests'})"
                         f" | {_describe(arrival.spec)} | {arrival.ks:.3f} (gaps) | {len(starts)}"
                         f" | CV {arrival.cv:.2f}, mean {arrival.mean_rate:.3g}/s, peak "
                         f"{arrival.peak_rate:.3g}/s |")
    if prefix is not None:
        fitted.report.append(f"| prefix | {_describe({'dist': 'shared', **prefix})} | - | "
                             f"{len(sharers)} | - |")
    if any(r.hash_ids for r in reqs):
        ratio = prefix_reuse_ratio(BlockLayout(r.hash_ids, MOONCAKE_BLOCK, r.input_tokens)
                                   for r in reqs)
        fitted.report += ["", f"The log's prefix reuse: {ratio:.1%} of prompt tokens (replay "
                          "it as a trace to keep its exact structure)."]
    fitted.report += ["", "KS: Kolmogorov-Smirnov distance between the observed values and a "
                      "sample of the fitted model.", "", "## Not fitted", ""]
    fitted.not_fitted += ["slo and cost: not in a log; the placeholders must be edited"]
    fitted.report += [f"- {line}" for line in fitted.not_fitted]
    fitted.workload = {
        "name": stem, "model": model, "api": "chat" if log.format == "openai" else "completions",
        "classes": classes, **({"prefix": prefix} if prefix else {}), "arrival": arrival.spec,
        "stop": {"duration_s": 60}, "seed": 0,
        "slo": {"ttft_p95_ms": 2000, "itl_p95_ms": 100}, "cost": {"usd_per_hour": 1.0},
    }
    return fitted


def _length_classes(fitted: FittedWorkload, own: np.ndarray, outputs: np.ndarray,
                    label: str) -> list[dict[str, Any]]:
    classes = []
    groups = split_classes(own)
    for k, group in enumerate(groups):
        name = f"class{k + 1}" if len(groups) > 1 else "all"
        classes.append({
            "name": name, "weight": round(len(group) / len(own), 4),
            "input": fitted.length(own[group], f"{name}-input", f"{name} {label}"),
            "output": fitted.length(outputs[group], f"{name}-output", f"{name} output"),
        })
    return classes


def _conversation(fitted: FittedWorkload, reqs: tuple[LoggedRequest, ...], own: np.ndarray,
                  prefix: dict[str, Any] | None) -> tuple[list[dict[str, Any]], np.ndarray]:
    """One conversation class: turns per session, think times, each turn's new message."""
    by_session: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(reqs):
        by_session[r.session if r.session is not None else f"#{i}"].append(i)
    turns, thinks, messages, starts = [], [], [], []
    for indices in by_session.values():
        turns.append(len(indices))
        starts.append(reqs[indices[0]].time_s)
        messages.append(int(own[indices[0]]))
        for before, after in zip(indices, indices[1:], strict=False):
            thinks.append(max(1, round((reqs[after].time_s - reqs[before].time_s) * 1000)))
            grown = (reqs[after].input_tokens - reqs[before].input_tokens
                     - reqs[before].output_tokens)
            messages.append(max(1, grown))
    outputs = np.array([r.output_tokens for r in reqs])
    session: dict[str, Any] = {
        "turns": fitted.length(np.array(turns), "session-turns", "turns per session"),
        "think_ms": (fitted.length(np.array(thinks), "session-think-ms", "think time (ms)")
                     if thinks else {"dist": "fixed", "value": 1000}),
        "system_tokens": 0 if prefix is None else int(prefix["tokens"]),
    }
    if not thinks:
        fitted.not_fitted.append("think time: no session has two turns; 1000 ms assumed")
    cls = {"name": "conversation", "weight": 1,
           "input": fitted.length(np.array(messages), "message-input", "new message"),
           "output": fitted.length(outputs, "conversation-output", "output"),
           "session": session}
    fitted.not_fitted.append("classes: a log with sessions is fitted as one conversation class")
    return [cls], np.sort(np.array(starts))
