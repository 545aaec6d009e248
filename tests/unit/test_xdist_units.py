"""How README.md's test command splits the suite over pytest-xdist's workers (tests/conftest.py)."""

from __future__ import annotations

from tests.conftest import INTEGRATION, ONE_AT_A_TIME, next_unit, unit_of_work


def test_the_integration_tests_are_one_unit_and_the_others_one_per_module() -> None:
    assert INTEGRATION == "tests/integration/"
    assert unit_of_work("tests/integration/test_faults.py::test_a[x]") == ONE_AT_A_TIME
    assert unit_of_work("tests/integration/test_tune_vllm.py::TestC::test_d") == ONE_AT_A_TIME
    assert unit_of_work("tests/unit/test_layers.py::test_e[a::b]") == "tests/unit/test_layers.py"
    assert unit_of_work("tests/contracts/test_storage_postgres.py::T::t") == \
        "tests/contracts/test_storage_postgres.py"


def test_the_integration_unit_is_handed_out_when_nothing_else_is_left() -> None:
    assert next_unit([ONE_AT_A_TIME, "tests/unit/a.py::t", "tests/unit/b.py::t"]) == \
        "tests/unit/a.py::t"
    assert next_unit(["tests/unit/b.py::t", ONE_AT_A_TIME]) == "tests/unit/b.py::t"
    assert next_unit([ONE_AT_A_TIME]) == ONE_AT_A_TIME
