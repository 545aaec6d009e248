"""Real services for integration tests: a vLLM (CPU build) on the project's tiny model started
by the project's own launcher, a Docker daemon, a throwaway PostgreSQL server and an MLflow
tracking server backed by it."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import httpx
import psycopg
import pytest
from docker.errors import DockerException

from tests.integration.standin_study import stop_started
from tuner.engines import load_engine_spec
from tuner.launch import EngineHandle, LaunchRequest, ProcessLauncher, free_port, wait_ready

SERVED = "tiny-llama"


@pytest.fixture(autouse=True)
def no_study_left() -> Iterator[None]:
    """A test that failed with a stand-in study still running stops it (and its engines)."""
    yield
    stop_started()


def start_engine(engine: str, model: Path, config: dict[str, object], log: Path, *,
                 served: str = SERVED, cpus: str | None = None, timeout_s: float = 600
                 ) -> EngineHandle:
    """A real engine started as a trial starts it, and ready; stopped if it does not get
    ready (EngineStartError, or whatever stopped the wait)."""
    spec = load_engine_spec(engine)
    handle = ProcessLauncher().start(LaunchRequest(
        spec=spec, config=config, model=str(model), served_name=served, log_path=log,
        cpus=cpus))
    try:
        wait_ready(handle, spec, served, timeout_s=timeout_s)
    except BaseException:
        handle.stop()
        raise
    return handle


def start_vllm(model: Path, log_dir: Path, **config: object) -> EngineHandle:
    return start_engine("vllm", model, {"eager": True, "kv_cache_space_gib": 2, **config},
                        log_dir / "vllm.log")


@pytest.fixture(scope="module")
def vllm(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineHandle]:
    handle = start_vllm(tiny_model, tmp_path_factory.mktemp("vllm"))
    yield handle
    handle.stop()


REPO = Path(__file__).resolve().parents[2]
IMAGE = "tuner-test/vllm-cpu:local"


@pytest.fixture(scope="session")
def client() -> docker.DockerClient:
    """The Docker daemon, or a skip that says why there is none."""
    try:
        found = docker.from_env()
        found.ping()
    except (DockerException, OSError) as exc:
        pytest.skip(f"no Docker daemon reachable: {exc}")
    return found


@pytest.fixture(scope="session")
def image(client: docker.DockerClient) -> str:
    """The test image (vLLM's CPU build in a Debian root), built without a registry (or by
    set-up in the background, which the script waits for)."""
    subprocess.run(["bash", str(REPO / "tests" / "images" / "build-vllm-cpu.sh"), IMAGE],
                   check=True, timeout=1800)
    return IMAGE


def ours(client: docker.DockerClient, owner: int) -> list[object]:
    """The containers the tuner with pid ``owner`` started (its label)."""
    return client.containers.list(all=True, filters={"label": f"tuner.owner_pid={owner}"})


def wait_until(check: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.5)


def tune_cmd(model: Path, out: Path, study: str, *extra: str) -> list[str]:
    """A study of vLLM in the test image through the Docker launcher."""
    return [sys.executable, "-m", "tuner", "--engine", "vllm", "--launcher", "docker",
            "--image", IMAGE, "--workload", str(REPO / "tests" / "data" / "workload-ci.yaml"),
            "--search-space", str(REPO / "tests" / "data" / "space-ci.yaml"),
            "--model", str(model), "--out", str(out), "--study-name", study, *extra]


@dataclass
class DockerStudy:
    returncode: int
    stderr: str
    out: Path  # its --out: the study is out / "dock"
    pid: int


@pytest.fixture(scope="session")
def docker_study(image: str, client: docker.DockerClient, tiny_model: Path,
                 tmp_path_factory: pytest.TempPathFactory) -> DockerStudy:
    """A 3-trial study in containers, shared: test_docker checks how it classified its
    deaths (the defaults' container killed under load, a configuration vLLM refuses at start),
    test_export_docker deploys its one good trial."""
    out = tmp_path_factory.mktemp("docker-study")
    cmd = tune_cmd(tiny_model, out, "dock", "--trials", "3", "--remeasure-top", "0",
                   "--enqueue", str(REPO / "tests" / "data" / "enqueue-docker.yaml"))
    tune = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Kill the defaults trial's container once it is serving the load: a death under load.
        def serving() -> bool:
            for c in ours(client, tune.pid):
                if (c.labels.get("tuner.trial") == "trial-000" and
                        c.logs().decode(errors="replace")
                        .count("POST /v1/completions") >= 8):
                    c.kill()
                    return True
            return tune.poll() is not None
        wait_until(serving, 600, "the defaults trial to serve load")
        _, err = tune.communicate(timeout=900)
    finally:
        if tune.poll() is None:
            tune.kill()
    return DockerStudy(tune.returncode, err, out, tune.pid)


SECRET = "hf_s3cr3t_do_not_log_9431"


@dataclass
class Study:
    done: subprocess.CompletedProcess[str]
    out: Path        # what `tune compare --out` takes to reuse this study
    run_dir: Path    # the study's own folder
    tracking: Path   # the MLflow store


@pytest.fixture(scope="session")
def studies(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where `tune compare --out` finds the studies it reuses (compare-workload-ci/)."""
    return tmp_path_factory.mktemp("studies")


@pytest.fixture(scope="session")
def vllm_study(tiny_model: Path, studies: Path) -> Study:
    """A short real study of vLLM, shared: the tune test checks it, the compare test reuses it.
    It is laid out the way `tune compare` lays out its studies."""
    out = studies
    folder = out / "compare-workload-ci"
    env = {**os.environ, "TUNER_HF_TOKEN": SECRET}
    done = subprocess.run(
        [sys.executable, "-m", "tuner", "--engine", "vllm",
         "--workload", str(REPO / "tests" / "data" / "workload-ci.yaml"),
         "--model", str(tiny_model), "--trials", "3", "--remeasure-top", "0",
         "--enqueue", str(REPO / "tests" / "data" / "enqueue-ci.yaml"),
         "--search-space", str(REPO / "tests" / "data" / "space-ci.yaml"),
         "--out", str(folder), "--study-name", "vllm-workload-ci", "--seed", "3",
         "--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}"],
        capture_output=True, text=True, timeout=1500, env=env)
    return Study(done, out, folder / "vllm-workload-ci", folder / "mlflow.db")


@pytest.fixture(scope="session")
def transformers_study(tiny_model: Path, studies: Path) -> Study:
    """A 2-trial real study of transformers serve, shared: its own test checks it, the compare
    test reuses it (laid out as `tune compare` lays out its studies). Trial 1 is continuous
    batching with a small paged cache (tests/data/enqueue-transformers-ci.yaml)."""
    folder = studies / "compare-workload-ci"
    done = subprocess.run(
        [sys.executable, "-m", "tuner", "--engine", "transformers",
         "--workload", str(REPO / "tests" / "data" / "workload-ci.yaml"),
         "--model", str(tiny_model), "--trials", "2", "--remeasure-top", "0",
         "--enqueue", str(REPO / "tests" / "data" / "enqueue-transformers-ci.yaml"),
         "--out", str(folder), "--study-name", "transformers-workload-ci", "--seed", "3",
         "--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}"],
        capture_output=True, text=True, timeout=1500)
    return Study(done, studies, folder / "transformers-workload-ci", folder / "mlflow.db")


@dataclass
class Postgres:
    port: int
    user: str
    data: Path
    as_user: list[str]

    def url(self, database: str) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        """Stop the server (fast: its sessions are cut, as in a restart)."""
        subprocess.run([*self.as_user, _pg_bin("pg_ctl"), "-D", str(self.data), "-m", "fast",
                        "-w", "stop"], check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        """Start it again, on the same port, with the same data."""
        subprocess.run([*self.as_user, _pg_bin("pg_ctl"), "-D", str(self.data), "-l",
                        str(self.data.parent / "server.log"), "-w", "-o",
                        f"-p {self.port} -k {self.data.parent} -c listen_addresses=127.0.0.1 "
                        "-c fsync=off -c max_connections=200", "start"],
                       check=True, capture_output=True, text=True, timeout=120)


def _pg_bin(tool: str) -> str:
    found = shutil.which(tool) or next(iter(sorted(glob.glob(
        f"/usr/lib/postgresql/*/bin/{tool}"), reverse=True)), None)
    if found is None:
        pytest.fail(f"PostgreSQL's {tool} is not installed: run .ci/setup as root (it "
                    "installs postgresql)")
    return found


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    """A throwaway PostgreSQL server: its data in a temporary folder, on a free port of
    127.0.0.1 only, trusting local connections; stopped and removed at the end. As root, the
    server runs as the unprivileged ``postgres`` user (PostgreSQL refuses to run as root)."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    as_user: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="tuner-pg-"))
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(folder, "postgres")
    data, port = folder / "data", free_port()
    server = Postgres(port=port, user="tuner", data=data, as_user=as_user)
    try:
        subprocess.run([*as_user, initdb, "-D", str(data), "-U", "tuner", "--auth=trust", "-E",
                        "UTF8", "--locale=C", "--no-sync"], check=True, capture_output=True,
                       text=True, timeout=120)
        server.start()
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start: {exc.stderr}") from exc
    try:
        yield server
    finally:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"],
                       capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


class MlflowServer:
    """A real ``mlflow server`` on a port of 127.0.0.1, serving (proxying) its artifact
    store; stopped and started again on the same port and stores by a test."""

    def __init__(self, store: str, folder: Path) -> None:
        self.store, self.folder, self.port = store, folder, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with (self.folder / "server.log").open("a") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", self.store,
                 "--artifacts-destination", str(self.folder / "artifacts"),
                 "--serve-artifacts", "--host", "127.0.0.1", "--port", str(self.port),
                 "--workers", "1"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("mlflow server did not start: "
                                   + (self.folder / "server.log").read_text()[-2000:])
            time.sleep(1)

    def stop(self) -> None:
        """Stop it and everything it started (its workers), as a host going down would."""
        if self.process is None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        with contextlib.suppress(ProcessLookupError):  # a worker that outlived the master
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process = None


@pytest.fixture
def tracking(tmp_path: Path) -> Iterator[MlflowServer]:
    """A tracking server of the test's own (a SQLite store), to stop and start again."""
    folder = tmp_path / "mlflow"
    folder.mkdir()
    server = MlflowServer(f"sqlite:///{folder / 'store.db'}", folder)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def mlflow_server(postgres: Postgres, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[str]:
    """A real ``mlflow server`` backed by the PostgreSQL above, serving (proxying) its
    artifact store; its URL."""
    store = postgres.create_database("mlflow").replace("postgresql://",
                                                       "postgresql+psycopg://")
    server = MlflowServer(store, tmp_path_factory.mktemp("mlflow"))
    server.start()
    try:
        yield server.url
    finally:
        server.stop()
