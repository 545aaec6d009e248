"""A finished study reviewed in MLflow's own UI, in a real browser: ``mlflow ui`` on the
study's store, its runs page loaded in headless Chromium (Debian's package, driven by
Selenium through Debian's chromedriver), where the study's view lists every trial, named by
number, outcome and cost, with its cost in the table.

The study is a real ``tune`` run on the unit tests' fake engine (tests/integration/fake_tune.py,
as in test_distributed.py): what is proven is what MLflow shows of a study, not any engine."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mlflow.tracking import MlflowClient
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.unit.fakes.model import fake_model
from tuner.launch import free_port
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
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A finished study of five trials on the fake engine; its MLflow store's URI."""
    out = tmp_path_factory.mktemp("study")
    model = fake_model(out / "model")
    uri = f"sqlite:///{out / 'mlflow.db'}"
    done = subprocess.run(
        [sys.executable, "-m", "tests.integration.fake_tune", "make", "--engine", "vllm",
         "--workload", str(DATA / "workload-ci.yaml"),
         "--search-space", str(DATA / "space-ci.yaml"), "--model", str(model),
         "--trials", "5", "--remeasure-top", "0", "--study-name", STUDY,
         "--out", str(out), "--tracking-uri", uri, "--seed", "2"],
        env={**os.environ, "TUNER_FAKE_TRIAL_S": "0.2", "TUNER_PIN_CORES": "0",
             "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, timeout=600, cwd=out)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "#/experiments/" in done.stdout  # the end of tune says where its trials are shown
    return uri


@pytest.fixture(scope="module")
def ui(store: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``mlflow ui`` on the study's store, on a free port of 127.0.0.1; its address."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("ui") / "ui.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", store,
             "--host", "127.0.0.1", "--port", str(port)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("mlflow ui did not start: " + log_path.read_text()[-2000:])
            time.sleep(1)
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


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


def test_the_runs_page_lists_every_trial_with_its_cost(store: str, ui: str,
                                                       browser: webdriver.Chrome) -> None:
    client = MlflowClient(tracking_uri=store)
    exp = client.get_experiment_by_name(STUDY)
    assert exp is not None
    assert exp.tags[KIND_TAG] == MODEL_TRAINING
    assert VIEW_TAG in exp.tags
    trials = client.search_runs([exp.experiment_id], "tags.`tuner.role` = 'trial'")
    assert len(trials) >= 5
    costs = {r.info.run_name: r.data.metrics["cost_per_m_output_tokens"] for r in trials
             if "cost_per_m_output_tokens" in r.data.metrics}
    assert costs

    browser.get(f"{ui}/{runs_page(exp.experiment_id)}")
    body = browser.find_element(By.TAG_NAME, "body")
    try:
        WebDriverWait(browser, 60).until(
            lambda _: all(r.info.run_name in body.text for r in trials))
    except Exception:
        pytest.fail(f"the runs page does not list every trial; it shows:\n{body.text[:3000]}")
    for run in trials:  # named by number, outcome and (when it met the SLOs) cost
        assert re.fullmatch(r"trial-\d{3} [a-z_]+( \$[0-9.e+-]+/M)?", run.info.run_name or "")
    # the table's columns are the study's view: its cost column shows each feasible cost
    shown = [float(t) for t in cells(browser, "metrics.`cost_per_m_output_tokens`")
             if re.fullmatch(r"\d[\d.]*(e[+-]?\d+)?", t)]
    for cost in costs.values():  # as the table rounds it
        assert any(abs(v - cost) <= 1e-2 * cost for v in shown), (cost, shown)
    for key in ("max_load", "ttft_p95_ms", "itl_p95_ms"):  # the other columns of the view
        assert cells(browser, f"metrics.`{key}`"), key


def test_the_study_run_holds_its_plots(store: str) -> None:
    client = MlflowClient(tracking_uri=store)
    exp = client.get_experiment_by_name(STUDY)
    assert exp is not None
    parent = client.search_runs([exp.experiment_id], "tags.`tuner.role` = 'study'")[0]
    plots = {Path(a.path).name for a in client.list_artifacts(parent.info.run_id, "plots")}
    assert {"optimization_history.png", "param_importances.png", "pareto.png"} <= plots
