"""Every metric name the tuner reads from an engine's /metrics appears among the metrics the
pinned version of that engine registers. The names found in each engine's source are saved, with
how they were taken, in engines/help/<engine>-<version>-metrics.txt."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.loadgen import COUNTERS, GAUGES

HELP = Path(__file__).resolve().parents[3] / "engines" / "help"
# engine: (its metric names' prefix, the saved list of the pinned version's metrics)
SOURCES = {
    "tgi": ("tgi_", "tgi-3.3.5-metrics.txt"),
    "sglang": ("sglang:", "sglang-0.5.6-metrics.txt"),
    "trtllm": ("trtllm_", "trtllm-1.0.0-metrics.txt"),
    "llamacpp": ("llamacpp:", "llama-server-b11312-metrics.txt"),
    "vllm": ("vllm:", "vllm-0.32.0-metrics.txt"),
}
def exposed(path: Path) -> set[str]:
    """The sample names a Prometheus scrape can show for the `name kind` lines of ``path``."""
    names: set[str] = set()
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, kind = line.split()
        names.add(name)
        if "histogram" in kind.split(",") or "summary" in kind.split(","):
            names |= {f"{name}_sum", f"{name}_count", f"{name}_bucket"}
    return names


def read_by_tuner(prefix: str) -> set[str]:
    return {n for names in (*GAUGES.values(), *COUNTERS.values()) for n in names
            if n.startswith(prefix)}


def test_each_saved_metric_list_says_how_it_was_taken() -> None:
    for _, file in SOURCES.values():
        text = (HELP / file).read_text()
        assert text.startswith("# "), file
        assert exposed(HELP / file), file


@pytest.mark.parametrize("engine", sorted(SOURCES))
def test_every_metric_the_tuner_reads_is_one_the_pinned_engine_emits(engine: str) -> None:
    prefix, file = SOURCES[engine]
    missing = sorted(read_by_tuner(prefix) - exposed(HELP / file))
    assert not missing, (f"tuner/loadgen/scraper.py reads {missing} from {engine}, which the "
                         f"pinned version does not emit (engines/help/{file})")


def test_every_vllm_metric_the_tuner_reads_was_in_a_real_scrape() -> None:
    """vLLM runs here: its /metrics, recorded (engines/help/vllm-0.32.0-metrics-scrape.txt),
    answers every name the scraper reads for it."""
    lines = (HELP / "vllm-0.32.0-metrics-scrape.txt").read_text().splitlines()
    scraped = {ln for ln in lines if ln and not ln.startswith("#")}
    assert read_by_tuner("vllm:") <= scraped
