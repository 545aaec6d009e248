"""How README.md's test command splits the suite over pytest-xdist's workers (tests/conftest.py)."""

from __future__ import annotations

from tests.conftest import (
    INTEGRATION,
    REAL_ENGINES,
    REPO,
    STAND_IN_MODULES,
    STAND_INS,
    unit_of_work,
)


def test_every_stand_in_module_is_in_tests_integration() -> None:
    assert STAND_IN_MODULES
    for name in STAND_IN_MODULES:
        assert (REPO / INTEGRATION / name).is_file(), name


def test_the_integration_tests_are_two_units_and_the_others_one_each() -> None:
    assert unit_of_work("tests/integration/test_faults.py::test_a[x]") == STAND_INS
    assert unit_of_work("tests/integration/test_compare.py::test_b") == REAL_ENGINES
    assert unit_of_work("tests/integration/test_tune_vllm.py::TestC::test_d") == REAL_ENGINES
    assert unit_of_work("tests/unit/test_layers.py::test_e") == "tests/unit/test_layers.py::test_e"
    assert unit_of_work("tests/contracts/test_storage_postgres.py::T::t") == \
        "tests/contracts/test_storage_postgres.py::T::t"
