"""A non-editable install finds its engine specs and search spaces.

The top-level ``engines/`` and ``search_spaces/`` are the source of truth; ``tuner/data`` links to
them and a wheel carries copies. This builds the wheel, installs it into a fresh virtual
environment that sees neither the source tree nor the editable install, and runs it from a folder
outside the repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]

# What the build must not copy: the repository's ignored and generated folders.
NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", ".wheels", "build", "dist", "*.egg-info", "__pycache__", ".*_cache",
    "tune-runs", "mlruns", "mlartifacts", "*.db")

LOAD_ALL = """
import tuner
from tuner.engines.spec import engine_names, load_engine_spec, specs_root
from tuner.study.space import load_search_space

print("tuner", tuner.__version__, tuner.__file__)
print("specs", specs_root())
for name in engine_names():
    spec = load_engine_spec(name)
    space = load_search_space(name)
    print("engine", spec.name, len(spec.knobs), "knobs; space", sorted(space.knobs))
"""


def data_files() -> set[str]:
    """The wheel paths every shipped data file must have, from the top-level folders."""
    found = [*REPO.glob("engines/*.yaml"), *REPO.glob("engines/help/*.txt"),
             *REPO.glob("search_spaces/*.yaml")]
    return {f"tuner/data/{p.relative_to(REPO).as_posix()}" for p in found}


def run(*argv: str | Path, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def test_wheel_ships_and_finds_specs(tmp_path: Path) -> None:
    # Build from a copy: setuptools writes build/ and *.egg-info into the tree it builds, and a
    # stale build/lib there would leak deleted modules into the wheel. The copy keeps the links.
    source = tmp_path / "source"
    shutil.copytree(REPO, source, symlinks=True, ignore=NOT_SOURCES)
    assert (source / "tuner" / "data" / "engines").is_symlink()
    wheels = tmp_path / "wheels"
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
        "--wheel-dir", wheels, source, cwd=tmp_path)
    [wheel] = wheels.glob("tuner-*.whl")

    expected = data_files()
    assert len(expected) >= 3
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    assert expected <= shipped, f"missing from the wheel: {sorted(expected - shipped)}"

    # A fresh venv with no pip and no tuner; the wheel goes in before the venv can see the
    # project's dependencies, so pip finds no tuner (the editable one) to replace.
    fresh = tmp_path / "fresh"
    run(sys.executable, "-m", "venv", "--without-pip", fresh, cwd=tmp_path)
    python = fresh / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
        wheel, cwd=tmp_path)
    # Dependencies from the project's venv: a path line adds its site-packages to sys.path but
    # runs none of its .pth files, so the editable install's finder never loads.
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                    cwd=tmp_path).stdout.strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert run(fresh / "bin" / "tune", "--help", cwd=elsewhere).stdout.strip()

    out = run(python, "-c", LOAD_ALL, cwd=elsewhere).stdout
    print(out)
    lines = out.splitlines()
    tuner_file = Path(lines[0].split()[2]).resolve()
    specs = Path(lines[1].split(maxsplit=1)[1]).resolve()
    assert tuner_file.is_relative_to(fresh.resolve()), lines[0]
    assert specs.is_relative_to(site.resolve()), lines[1]
    assert not (site / "tuner" / "data" / "engines").is_symlink()
    engines = sorted(p.stem for p in REPO.glob("engines/*.yaml"))
    assert [line.split()[1] for line in lines[2:]] == engines
