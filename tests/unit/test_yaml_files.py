"""Every YAML file in the repository is validated by the model that reads it."""

import subprocess
from pathlib import Path

import pytest
import yaml

from tuner.commands.named_config import named_config
from tuner.commands.tune import parse_enqueue
from tuner.engines import parse_engine_spec
from tuner.models import shape_named
from tuner.study import load_search_space
from tuner.workload import implausible, load_workload

REPO = Path(__file__).resolve().parents[2]


def _repository_yaml() -> list[Path]:
    """The repository's YAML files: tracked or new, not those git ignores (what runs wrote:
    studies' best_config.yaml, set-up's llama.cpp source). Without git, every file but those."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard", "*.yaml", "*.yml"], cwd=REPO,
                                capture_output=True, check=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        return sorted(p for p in REPO.rglob("*.y*ml") if p.suffix in (".yaml", ".yml")
                      and not {".venv", ".wheels", "tune-runs", "run"} & set(p.parts))
    return sorted(REPO / name for name in listed.split("\0") if name and (REPO / name).exists())


ALL_YAML = _repository_yaml()


def kind(path: Path) -> str:
    rel = path.relative_to(REPO).parts
    if rel[0] == "engines":
        return "engine"
    if rel[0] == "search_spaces" or path.name.startswith("space-"):
        return "space"
    if ((rel[0] == "experiments" and "workloads" in rel) or path.name.startswith("workload")):
        return "workload"
    if path.name.startswith("enqueue"):
        return "enqueue"
    if path.name.startswith("grid-"):
        return "grid"
    if "controls" in rel or path.name.startswith("preset-"):  # tune measure --config files
        return "config"
    if rel[:3] == ("tuner", "models", "shapes"):
        return "shape"
    return "other"


@pytest.mark.parametrize("path", ALL_YAML, ids=lambda p: str(p.relative_to(REPO)))
def test_yaml_file_is_valid(path: Path) -> None:
    k = kind(path)
    if k == "engine":
        spec = parse_engine_spec(path)
        assert spec.name == path.stem
    elif k == "space":
        space = load_search_space(path)
        space.check_against(parse_engine_spec(REPO / "engines" / f"{space.engine}.yaml"))
    elif k == "workload":
        assert implausible(load_workload(path)) == []  # no SLO in seconds written as ms
    elif k == "enqueue":
        configs = parse_enqueue(path)
        engine = next((e for e in ("llamacpp", "transformers") if e in path.name), "vllm")
        spec = parse_engine_spec(REPO / "engines" / f"{engine}.yaml")
        for config in configs:
            assert set(config) <= set(spec.knobs), config
    elif k == "grid":  # experiments/search-efficiency: knob values to measure every product of
        grid = yaml.safe_load(path.read_text())
        spec = parse_engine_spec(REPO / "engines" / f"{grid['engine']}.yaml")
        assert set(grid["knobs"]) <= set(spec.knobs), grid["knobs"]
        assert all(isinstance(v, list) and v for v in grid["knobs"].values()), grid["knobs"]
    elif k == "config":
        named = named_config(str(path), parse_engine_spec(REPO / "engines" / "vllm.yaml"))
        assert not named.defaults
        assert named.knobs
    elif k == "shape":
        assert shape_named(path.stem).name == path.stem
    else:
        pytest.fail(f"{path}: no validator knows this YAML file; add one here")


def test_the_shipped_workloads_include_the_typical_mix_and_an_agent_workload() -> None:
    typical = load_workload(REPO / "experiments" / "workloads" / "chat-doc-mix.yaml")
    weights = {c.name: c.weight for c in typical.classes}
    assert weights == {"chat": 0.7, "doc": 0.3}
    agent = load_workload(REPO / "experiments" / "workloads" / "agent-shared-prefix.yaml")
    assert agent.prefix is not None
    assert agent.prefix.share >= 0.5


def test_every_engine_has_a_search_space() -> None:
    engines = {p.stem for p in (REPO / "engines").glob("*.yaml")}
    spaces = {p.stem for p in (REPO / "search_spaces").glob("*.yaml")}
    assert engines == spaces
