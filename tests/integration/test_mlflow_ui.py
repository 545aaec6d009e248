"""A finished study reviewed in MLflow's own UI, in a real browser: a two-trial study of the
real llama-server, tracked on a real ``mlflow server``; the page the end of ``tune`` prints,
loaded in headless Chromium (Debian's package, driven by Selenium through Debian's
chromedriver), lists every trial with its cost, capacity and SLO figures and its outcome in the
study's saved view; the plain experiment page lists every trial by name (number, outcome,
cost) on MLflow's own columns. Screenshots: experiments/ui/ (TUNER_UI_SCREENSHOTS=experiments/ui
when the test runs)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow.entities import Run
from mlflow.tracking import MlflowClient
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.integration.conftest import MlflowServer
from tuner.tracking import KIND_TAG, MODEL_TRAINING, VIEW_TAG, runs_page

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
STUDY = "ui"


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: run .ci/setup as root (it installs Debian's "
                    "chromium and chromium-driver)")
    return found


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    """A real ``mlflow server`` (a SQLite store, its artifacts served), as a team runs one."""
    folder = tmp_path_factory.mktemp("mlflow")
    found = MlflowServer(f"sqlite:///{folder / 'store.db'}", folder)
    found.start()
    try:
        yield found
    finally:
        found.stop()


@pytest.fixture(scope="module")
def study(server: MlflowServer, gguf_model: Path, tmp_path_factory: pytest.TempPathFactory
          ) -> str:
    """A finished two-trial study of the real llama-server, tracked on that server; the page
    the end of ``tune`` names."""
    out = tmp_path_factory.mktemp("study")
    done = subprocess.run(
        [sys.executable, "-m", "tuner", "--engine", "llamacpp",
         "--workload", str(DATA / "workload-llamacpp-ci.yaml"), "--model", str(gguf_model),
         "--trials", "2", "--remeasure-top", "0", "--study-name", STUDY,
         "--out", str(out), "--tracking-uri", server.url, "--seed", "2"],
        env={**os.environ, "TUNER_PIN_CORES": "0"}, capture_output=True, text=True,
        timeout=900, cwd=out)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = re.search(r"trials in MLflow: (\S+)", done.stdout)
    assert printed is not None, done.stdout[-2000:]
    assert printed.group(1).startswith(f"{server.url}/#/experiments/")
    return printed.group(1)


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    options = Options()
    options.binary_location = tool("chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--window-size=1920,1200"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(tool("chromedriver")), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def cells(driver: webdriver.Chrome, col_id: str) -> list[str]:
    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, f'[col-id="{col_id}"]')
            if e.text.strip()]


def shots(tmp_path: Path) -> Path:
    """Where screenshots go: TUNER_UI_SCREENSHOTS (experiments/ui/ keeps the committed ones),
    else the test's own folder."""
    return Path(os.environ.get("TUNER_UI_SCREENSHOTS") or tmp_path)


def trial_runs(server: MlflowServer) -> tuple[str, list[Run]]:
    client = MlflowClient(tracking_uri=server.url)
    exp = client.get_experiment_by_name(STUDY)
    assert exp is not None
    assert exp.tags[KIND_TAG] == MODEL_TRAINING
    assert VIEW_TAG in exp.tags
    return exp.experiment_id, client.search_runs([exp.experiment_id],
                                                 "tags.`tuner.role` = 'trial'")


def wait_listed(browser: webdriver.Chrome, runs: list[Run]) -> None:
    body = browser.find_element(By.TAG_NAME, "body")
    try:
        WebDriverWait(browser, 60).until(
            lambda _: all(r.info.run_name in body.text for r in runs))
    except Exception:
        pytest.fail(f"the page does not list every trial; it shows:\n{body.text[:3000]}")


def test_the_printed_page_lists_every_trial_with_its_cost_and_slo_columns(
        server: MlflowServer, study: str, browser: webdriver.Chrome, tmp_path: Path) -> None:
    experiment, trials = trial_runs(server)
    assert len(trials) >= 2
    costs = {r.info.run_name: r.data.metrics["cost_per_m_output_tokens"] for r in trials
             if "cost_per_m_output_tokens" in r.data.metrics}
    assert study == f"{server.url}/{runs_page(experiment)}"

    browser.get(study)
    wait_listed(browser, trials)
    time.sleep(1)  # the table's cells render after its rows
    browser.save_screenshot(str(shots(tmp_path) / "study-view.png"))
    for run in trials:  # named by number, outcome and (when it met the SLOs) cost
        assert re.fullmatch(r"trial-\d{3} [a-z_]+( \$[0-9.e+-]+/M)?", run.info.run_name or "")
    # the table's columns are the study's view: its cost column shows each feasible cost
    shown = [float(t) for t in cells(browser, "metrics.`cost_per_m_output_tokens`")
             if re.fullmatch(r"\d[\d.]*(e[+-]?\d+)?", t)]
    for cost in costs.values():  # as the table rounds it
        assert any(abs(v - cost) <= 1e-2 * cost for v in shown), (cost, shown)
    for key in ("max_load", "ttft_p95_ms", "itl_p95_ms"):  # the SLO figures of the view
        if any(key in r.data.metrics for r in trials):
            assert cells(browser, f"metrics.`{key}`"), key
    assert cells(browser, "tags.`tuner.outcome`")


def test_the_plain_experiment_pages_as_mlflow_opens_them(
        server: MlflowServer, study: str, browser: webdriver.Chrome, tmp_path: Path) -> None:
    """The experiment as someone who opens MLflow without the printed link sees it. MLflow
    keeps a runs table's columns, and its switch between GenAI and model training, in the
    browser; a saved view (the printed link) is the one way to give them from outside. So in
    a fresh browser the experiment's own page opens on MLflow's GenAI overview, which lists no
    run, and its runs page on MLflow's default columns, where each trial's name carries its
    number, outcome and cost."""
    experiment, trials = trial_runs(server)
    browser.get(f"{server.url}/#/experiments/{experiment}")
    body = browser.find_element(By.TAG_NAME, "body")
    WebDriverWait(browser, 60).until(lambda _: "Traces" in body.text)
    time.sleep(2)
    browser.save_screenshot(str(shots(tmp_path) / "experiment-page.png"))
    assert not any(r.info.run_name in body.text for r in trials), (
        "MLflow now opens the experiment on its runs: say so in docs/commands.md")

    browser.get(f"{server.url}/#/experiments/{experiment}/runs")
    body = browser.find_element(By.TAG_NAME, "body")
    matching = f"{len(trials) + 1} matching runs"  # the study's run and its trials, nested
    try:
        WebDriverWait(browser, 60).until(lambda _: matching in body.text)
    except Exception:
        pytest.fail(f"the runs page does not count the study's runs; it shows:\n"
                    f"{body.text[:3000]}")
    time.sleep(2)
    browser.save_screenshot(str(shots(tmp_path) / "experiment-runs-page.png"))
    assert STUDY in cells(browser, "run_name") or STUDY in body.text
    assert not cells(browser, "metrics.`cost_per_m_output_tokens`"), (
        "MLflow now shows the study's columns on its plain runs page: say so in docs/")


def test_the_study_run_holds_its_plots(server: MlflowServer, study: str) -> None:
    client = MlflowClient(tracking_uri=server.url)
    exp = client.get_experiment_by_name(STUDY)
    assert exp is not None
    parent = client.search_runs([exp.experiment_id], "tags.`tuner.role` = 'study'")[0]
    plots = {Path(a.path).name for a in client.list_artifacts(parent.info.run_id, "plots")}
    assert "optimization_history.png" in plots
    met = client.search_runs([exp.experiment_id], "tags.`tuner.outcome` = 'ok'")
    assert ("pareto.png" in plots) == bool(met)  # the front, when a trial met the SLOs
