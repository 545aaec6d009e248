"""Each sub-package's ``__init__`` is its face (in the spirit of httpx's
tests/test_exported_members.py): it exports, in ``__all__``, the names other packages use and
only those, and everything else in it is private. Other packages, experiments/ and the tests
outside the package's own unit tests import through the faces; a sub-package may import its
parent package's modules (the face would import it back), and ``tuner.commands`` has no face:
its modules are the CLI's verbs, which tuner/cli.py imports one at a time."""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "tuner"
FACES = sorted(".".join(p.parent.relative_to(REPO).parts) for p in PACKAGE.rglob("__init__.py")
               if p.parent != PACKAGE and p.parent.name != "commands")
SOURCES = sorted([*PACKAGE.rglob("*.py"), *(REPO / "tests").rglob("*.py"),
                  *(REPO / "experiments").rglob("*.py")])


def package_of(module: str) -> str | None:
    """The face a module ``tuner.a.b.c`` sits behind (the deepest package that has one)."""
    if module in FACES:
        return module
    parts = module.split(".")
    for end in range(len(parts) - 1, 1, -1):
        if ".".join(parts[:end]) in FACES:
            return ".".join(parts[:end])
    return None


def module_of(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def may_reach_inside(path: Path, face: str) -> bool:
    """A module of the package or of a package below it, or the package's own unit tests."""
    me = module_of(path)
    if me.startswith(face + ".") or me == f"{face}.__init__":
        return True
    top = face.split(".")[1]
    return path.is_relative_to(REPO / "tests" / "unit" / top)


@functools.cache
def imports(path: Path) -> tuple[tuple[int, str, list[str]], ...]:
    """``path``'s imports, read once per session (the files do not change under the tests)."""
    return tuple(_imports(path))


def _imports(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []


@pytest.mark.parametrize("face", FACES)
def test_a_face_exports_what_it_names(face: str) -> None:
    module = importlib.import_module(face)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{face}: give its __init__ an __all__"
    assert sorted(exported) == exported, f"{face}: keep __all__ sorted"
    missing = [name for name in exported if not hasattr(module, name)]
    assert missing == [], f"{face} names {missing} in __all__ but has no such member"


@functools.cache
def used_outside() -> dict[str, set[str]]:
    used: dict[str, set[str]] = {face: set() for face in FACES}
    for path in SOURCES:
        for _, module, names in imports(path):
            if module in used and not may_reach_inside(path, module):
                used[module].update(names)
    return used


@pytest.mark.parametrize("face", FACES)
def test_a_face_exports_only_what_others_use(face: str) -> None:
    exported = set(importlib.import_module(face).__all__)
    unused = sorted(exported - used_outside()[face])
    assert unused == [], f"{face} exports {unused}, which no other package imports: drop them"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_other_packages_import_through_the_faces(path: Path) -> None:
    private = []
    for line, module, _ in imports(path):
        face = package_of(module)
        if face is not None and module != face and not may_reach_inside(path, face):
            private.append(f"line {line}: {module} (import it from {face})")
    assert private == [], f"{path.relative_to(REPO)} reaches past a face: {private}"


def a_test_patching(path: Path, face: str, name: str) -> bool:
    """A test may take a module object through its package, to patch it."""
    return (path.is_relative_to(REPO / "tests")
            and importlib.util.find_spec(f"{face}.{name}") is not None)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_what_is_imported_from_a_face_is_exported_by_it(path: Path) -> None:
    unexported = []
    for line, module, names in imports(path):
        if module in FACES and not may_reach_inside(path, module):
            exported = set(importlib.import_module(module).__all__)
            unexported += [f"line {line}: {n} from {module}" for n in names
                           if n not in exported and not a_test_patching(path, module, n)]
    assert unexported == [], f"{path.relative_to(REPO)} imports what no face exports: {unexported}"
