import numpy as np
import pytest
from pydantic import TypeAdapter, ValidationError

from tuner.workload.lengths import LengthDist

adapter: TypeAdapter[object] = TypeAdapter(LengthDist)


def dist(**kw: object):  # type: ignore[no-untyped-def]
    return adapter.validate_python(kw, context={"base_dir": None})


def test_fixed_is_constant() -> None:
    assert set(dist(dist="fixed", value=80).sample(np.random.default_rng(0), 100)) == {80}


@pytest.mark.parametrize("spec", [
    {"dist": "uniform", "min": 10, "max": 20},
    {"dist": "normal", "mean": 100, "std": 50, "min": 60, "max": 140},
    {"dist": "lognormal", "mean": 200, "sigma": 1.0, "min": 16, "max": 1000},
])
def test_draws_stay_within_bounds(spec: dict[str, object]) -> None:
    d = dist(**spec)
    values = d.sample(np.random.default_rng(1), 5000)
    low, high = d.bounds()
    assert values.min() >= low
    assert values.max() <= high
    assert values.dtype == np.int64


def test_lognormal_mean_matches_when_bounds_are_wide() -> None:
    d = dist(dist="lognormal", mean=4000, sigma=0.3, min=1, max=100000)
    assert abs(d.sample(np.random.default_rng(2), 20000).mean() - 4000) < 60


@pytest.mark.parametrize(("spec", "needle"), [
    ({"dist": "uniform", "min": 30, "max": 20}, "min <= max"),
    ({"dist": "normal", "mean": 500, "std": 5, "min": 1, "max": 100}, "min <= mean <= max"),
    ({"dist": "normal", "mean": 50, "std": 0, "min": 1, "max": 100}, "greater than 0"),
    ({"dist": "fixed", "value": 0}, "greater than or equal to 1"),
    ({"dist": "zipf", "value": 3}, "does not match any of the expected tags"),
])
def test_impossible_distributions_are_refused(spec: dict[str, object], needle: str) -> None:
    with pytest.raises(ValidationError, match=needle):
        dist(**spec)


def test_empirical_draws_only_listed_lengths(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "lengths.txt").write_text("# from production\n12\n40\n40\n300\n")
    d = adapter.validate_python({"dist": "empirical", "file": "lengths.txt"},
                                context={"base_dir": tmp_path})
    assert set(d.sample(np.random.default_rng(0), 500)) == {12, 40, 300}
    assert d.bounds() == (12, 300)


def test_empirical_rejects_bad_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "bad.txt").write_text("12\nlots\n")
    with pytest.raises(ValidationError, match="'lots' is not an integer"):
        adapter.validate_python({"dist": "empirical", "file": "bad.txt"},
                                context={"base_dir": tmp_path})
    with pytest.raises(ValidationError, match="does not exist"):
        adapter.validate_python({"dist": "empirical", "file": "none.txt"},
                                context={"base_dir": tmp_path})
