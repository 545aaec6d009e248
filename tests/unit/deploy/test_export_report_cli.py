"""``tune export`` and ``tune report`` on a study folder, through the command line (in process)."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from tests.unit.deploy.conftest import MakeStudy
from tuner.cli import app

runner = CliRunner()


def test_export_writes_the_format_to_stdout_or_a_file(make_study: MakeStudy,
                                                      tmp_path: Path) -> None:
    folder = make_study(winner=1)
    done = runner.invoke(app, ["export", "--study", str(folder), "--format", "k8s",
                               "--pick", "fastest"])
    assert done.exit_code == 0, done.output
    kinds = [d["kind"] for d in yaml.safe_load_all(done.stdout) if d]
    assert kinds == ["Deployment", "Service"]
    assert "trial 0 (the engine's defaults)" in done.stdout
    out = tmp_path / "run.sh"
    done = runner.invoke(app, ["export", "--study", str(folder), "--format", "docker",
                               "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert out.read_text().count("docker run -d --name vllm-chat-t1") == 1


def test_bad_export_input_is_one_line_exit_2(make_study: MakeStudy) -> None:
    folder = make_study(winner=1)
    done = runner.invoke(app, ["export", "--study", str(folder), "--format", "k8s",
                               "--pick", "ttft_p95_ms<=10"])
    assert done.exit_code == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: --pick ttft_p95_ms<=10: no trial is that fast")


def test_report_shows_a_studys_front_and_plots_it(make_study: MakeStudy) -> None:
    folder = make_study(winner=1)
    done = runner.invoke(app, ["report", "--dir", str(folder)])
    assert done.exit_code == 0, done.output
    text = " ".join(done.stdout.split())  # the table wraps at the console's width
    assert "the Pareto front (3 of 3 trials that met the SLOs)" in text
    assert "cheapest: trial 1 at $1/M output tokens; fastest: trial 0" in text
    assert (folder / "plots" / "pareto.png").stat().st_size > 10_000


def test_report_of_a_folder_that_is_neither(tmp_path: Path) -> None:
    done = runner.invoke(app, ["report", "--dir", str(tmp_path)])
    assert done.exit_code == 2
    assert "neither a comparison (inputs.json) nor a study (config.json)" in done.stderr
