"""Trace replay with the prefix structure: hash_ids become shared token blocks."""

import json
from pathlib import Path

import numpy as np
import pytest

from tuner.workload.models import Workload
from tuner.workload.plan import RequestFactory, plan_notes
from tuner.workload.prefix_blocks import BlockLayout, prefix_reuse_ratio
from tuner.workload.prompts import PromptSynth
from tuner.workload.trace import NS, TraceArrivals


def write_trace(path: Path, block: int, n: int = 40, seed: int = 0) -> list[dict[str, object]]:
    """Mooncake-like lines: 3 shared system prefixes of 2 blocks, a unique tail of 1-3 blocks,
    the last block partial; every fifth request re-sends an earlier one's blocks (a turn)."""
    rng = np.random.default_rng(seed)
    lines: list[dict[str, object]] = []
    for i in range(n):
        if i % 5 == 4:
            ids = list(lines[i - 1]["hash_ids"]) + [5000 + i]  # type: ignore[call-overload]
        else:
            g = int(rng.integers(0, 3))
            ids = [g * 100, g * 100 + 1] + [1000 + i * 10 + k for k in range(rng.integers(1, 4))]
        length = (len(ids) - 1) * block + int(rng.integers(1, block + 1))
        lines.append({"timestamp": 250 * i, "input_length": length,
                      "output_length": int(rng.integers(20, 200)), "hash_ids": ids})
    path.write_text("\n".join(json.dumps(x) for x in lines))
    return lines


def workload(tmp_path: Path, **arrival: object) -> Workload:
    return Workload.model_validate({
        "model": "tiny-llama", "api": "chat",
        "arrival": {"process": "trace", "file": str(tmp_path / "t.jsonl"), **arrival},
        "stop": {"requests": 40}, "slo": {"ttft_p95_ms": 500, "itl_p95_ms": 50},
        "cost": {"usd_per_hour": 1.0},
    })


def token_blocks(synth: PromptSynth, prompt: str, size: int) -> list[tuple[int, ...]]:
    ids = synth._tok.encode(prompt, add_special_tokens=False).ids
    return [tuple(ids[k:k + size]) for k in range(0, len(ids), size)]


def test_reuse_ratio_counts_leading_blocks_seen_before() -> None:
    layouts = [BlockLayout((1, 2), 4, 8), BlockLayout((1, 2, 3), 4, 10),
               BlockLayout((1, 9), 4, 6), BlockLayout((7,), 4, 4)]
    # reused: 0, 8 (blocks 1, 2), 4 (block 1; block 9 is new), 0 -> 12 of 28 tokens
    assert prefix_reuse_ratio(layouts) == pytest.approx(12 / 28)
    # a partial block seen before is reused only as far as it was seen
    assert prefix_reuse_ratio([BlockLayout((1,), 4, 2), BlockLayout((1,), 4, 4)]) == 2 / 6


def test_equal_ids_are_equal_token_blocks_and_different_ids_differ(
        tmp_path: Path, synth: PromptSynth) -> None:
    lines = write_trace(tmp_path / "t.jsonl", block=16)
    w = workload(tmp_path, block_tokens=16)
    factory = RequestFactory(w, synth)
    by_id: dict[int, tuple[int, ...]] = {}
    for i, line in enumerate(lines):
        req = factory.make(i)
        assert req.input_tokens == line["input_length"]
        assert synth.count(req.prompt, specials=False) == req.input_tokens
        blocks = token_blocks(synth, req.prompt, 16)
        for block_id, tokens in zip(line["hash_ids"], blocks, strict=True):  # type: ignore[call-overload]
            if len(tokens) == 16:
                assert by_id.setdefault(block_id, tokens) == tokens
            else:  # the partial last block is the start of the full one
                assert by_id.get(block_id, tokens)[:len(tokens)] == tokens
    full = list(by_id.values())
    assert len(set(full)) == len(full)  # different ids, different blocks


def longest_shared_prefix(prompts: list[list[int]]) -> float:
    reused = 0
    for i, ids in enumerate(prompts):
        best = 0
        for earlier in prompts[:i]:
            n = 0
            while n < min(len(ids), len(earlier)) and ids[n] == earlier[n]:
                n += 1
            best = max(best, n)
        reused += best
    return reused / sum(len(p) for p in prompts)


def test_replayed_prompts_reuse_what_the_trace_reuses(tmp_path: Path,
                                                      synth: PromptSynth) -> None:
    write_trace(tmp_path / "t.jsonl", block=16)
    trace = workload(tmp_path, block_tokens=16).arrival
    assert isinstance(trace, TraceArrivals)
    original, replayed = trace.reuse_ratios()
    assert original == replayed
    assert 0.3 < original < 0.8
    factory = RequestFactory(workload(tmp_path, block_tokens=16), synth)
    prompts = [synth._tok.encode(factory.make(i).prompt, add_special_tokens=False).ids
               for i in range(40)]
    # measured on the tokens sent; a filler word may match by chance, hence the tolerance
    assert longest_shared_prefix(prompts) == pytest.approx(original, abs=0.01)


def test_length_scaling_keeps_the_sharing(tmp_path: Path, synth: PromptSynth) -> None:
    lines = write_trace(tmp_path / "t.jsonl", block=512)
    w = workload(tmp_path, length_scale=0.05)
    trace = w.arrival
    assert isinstance(trace, TraceArrivals)
    assert trace.scaled_block_tokens == 26
    original, replayed = trace.reuse_ratios()
    assert replayed == pytest.approx(original, abs=0.02)
    factory = RequestFactory(w, synth)
    by_id: dict[int, tuple[int, ...]] = {}
    for i, line in enumerate(lines):
        req = factory.make(i)
        assert req.input_tokens == pytest.approx(0.05 * line["input_length"], abs=26)  # type: ignore[operator]
        for block_id, tokens in zip(line["hash_ids"], token_blocks(synth, req.prompt, 26),  # type: ignore[call-overload]
                                    strict=True):
            if len(tokens) == 26:
                assert by_id.setdefault(block_id, tokens) == tokens


def test_window_caps_and_speed(tmp_path: Path) -> None:
    write_trace(tmp_path / "t.jsonl", block=512)
    trace = workload(tmp_path, window={"start_s": 1.0, "duration_s": 2.0}, speedup=0.5,
                     max_input_tokens=600, max_output_tokens=50).arrival
    assert isinstance(trace, TraceArrivals)
    assert len(trace.entries) == 8  # requests at 1.0, 1.25, ... 2.75 s
    assert max(e.input_tokens for e in trace.entries) == 600
    assert max(e.output_tokens for e in trace.entries) <= 50
    offsets = trace.offsets_ns(np.random.default_rng(0), None, None)
    assert offsets[-1] == int(7 * 0.25 / 0.5 * NS)  # slowed down twice
    original, replayed = trace.reuse_ratios()
    assert replayed != original  # a capped replay reuses otherwise, and says so


def test_bad_hash_ids_name_the_line(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text(
        '{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1]}\n'
        '{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": "x"}\n')
    with pytest.raises(ValueError, match=r"t.jsonl line 2: hash_ids: Input should be a valid "
                       "tuple"):
        workload(tmp_path)


def test_the_plan_reports_both_reuse_ratios(tmp_path: Path) -> None:
    write_trace(tmp_path / "t.jsonl", block=512)
    (note,) = plan_notes(workload(tmp_path, length_scale=0.05))
    assert note.startswith("prefix reuse: ")
    assert "replayed" in note
