"""The help reads like the README: every command has an example, its inputs and its outputs;
switches show as switches; `tune --version`; the engines listed; bad options one line.
Through the real command line."""

from __future__ import annotations

import pytest

from tests.unit.cli_runner import one_line_error, tune_all
from tuner import __version__
from tuner.engines import engine_names

COMMANDS = [["bench"], ["compare"], ["measure"], ["report"], ["export"], ["status"],
            ["worker"], ["cleanup"], ["make-model"], ["workload", "fit"]]


@pytest.mark.slow
def test_every_command_has_an_example_its_inputs_and_outputs() -> None:
    main, version, *helps = tune_all(["--help"], ["--version"],
                                     *([*c, "--help"] for c in COMMANDS))
    assert version.returncode == 0
    assert version.stdout.strip() == f"tune {__version__}"
    assert main.returncode == 0
    assert f"an engine ({', '.join(engine_names())})" in " ".join(main.stdout.split())
    for command, done in zip(COMMANDS, [main, *helps][1:], strict=True):
        assert done.returncode == 0, (command, done.stderr)
        text = " ".join(done.stdout.split())
        assert f"tune {' '.join(command)} " in text, command  # an example of it
        assert "Inputs: " in text, command
        assert "Outputs: " in text, command
        assert "<bool>" not in text, command  # switches are switches, not values
    bench = " ".join(helps[0].stdout.split())
    for option in ("--find-capacity search", "--load LOAD", "--duration SECONDS", "--seed N",
                   "--epoch N", "--debug show"):
        assert option in bench, option


def test_switches_take_no_value_and_bad_options_are_one_line() -> None:
    debug_true, load, compare = tune_all(["--debug", "true"],
                                         ["bench", "--endpoint", "http://x", "--workload", "w",
                                          "--load", "-1"],
                                         ["compare", "--help"])
    one_line_error(debug_true, 2, "No such command 'true'. (see tune --help)")
    one_line_error(load, 2, "Invalid value for '--load': Input should be greater than or equal "
                   "to 0.001 (see tune bench --help)")
    # compare's --repeats means what tune's does, with the same default
    assert "fresh starts per re-measured configuration" in " ".join(compare.stdout.split())
    options = " ".join(compare.stdout.split("Options:")[1].split())
    assert "[default: 2]" in options.split("--repeats")[1].split(" --")[0]
