"""Lazy faces (tuner.core.lazy_face): a name is imported from its module at its first use and
kept; an unknown name is an AttributeError; a name that is also one of the package's modules is
refused. tuner.report and tuner.ui, imported, bring none of what their heavy names need."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FACE = '''
from typing import TYPE_CHECKING

from tuner.core import lazy_face

if TYPE_CHECKING:
    from {pkg}.parts import answer, other as renamed

__all__ = ["answer", "renamed"]
__getattr__ = lazy_face(__name__, __file__)
'''


def package(root: Path, name: str, face: str = FACE) -> None:
    (root / name).mkdir()
    (root / name / "__init__.py").write_text(face.format(pkg=name))
    (root / name / "parts.py").write_text("answer = 42\nother = 'o'\nIMPORTED = True\n")


def test_a_name_is_imported_at_its_first_use_and_kept(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    package(tmp_path, "lazyfacepkg")
    monkeypatch.syspath_prepend(str(tmp_path))
    import lazyfacepkg  # type: ignore[import-not-found]

    assert "lazyfacepkg.parts" not in sys.modules
    assert lazyfacepkg.answer == 42
    assert "lazyfacepkg.parts" in sys.modules
    assert "answer" in vars(lazyfacepkg)  # kept: the next look-up is a plain attribute
    from lazyfacepkg import renamed

    assert renamed == "o"
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        lazyfacepkg.nothing  # noqa: B018
    from lazyfacepkg import parts  # a module of the package is still there by its name

    assert parts.IMPORTED


def test_a_lazy_name_that_is_also_a_module_is_refused(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    package(tmp_path, "lazyclashpkg", FACE.replace("answer, other as renamed", "parts"))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match="parts also name its modules"):
        import lazyclashpkg  # type: ignore[import-not-found]  # noqa: F401


def test_the_report_and_ui_faces_import_nothing_heavy() -> None:
    done = subprocess.run([sys.executable, "-c", (
        "import sys, tuner.report, tuner.ui\n"
        "print(sorted(m for m in ('tuner.study', 'optuna', 'sqlalchemy', 'mlflow', "
        "'matplotlib', 'tuner.measurement', 'tuner.tracking') if m in sys.modules))")],
        capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]", done.stdout
