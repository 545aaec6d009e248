"""The README and docs/ hold together: every relative link reaches a file and every #anchor a
heading (GitHub's slugs), every `tuner/...` path they name exists, and the README stays what a
newcomer reads first: short, its two commands at the top, its architecture map on one screen."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [README, *DOCS]

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1[ \t]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
EXTERNAL = ("http://", "https://", "mailto:")
TUNER_PATH = re.compile(r"(?<![\w./~-])tuner/[\w./*<>-]*")


def ids(pages: list[Path]) -> list[str]:
    return [str(p.relative_to(REPO)) for p in pages]


def without_code(text: str) -> str:
    """The text with fenced blocks and inline code spans taken out (links there are code)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def code_of(text: str) -> list[str]:
    """Every fenced block and inline code span of the text."""
    blocks = [m.group(0) for m in FENCE.finditer(text)]
    spans = [m.group(2) for m in CODE_SPAN.finditer(FENCE.sub("", text))]
    return blocks + spans


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lowercase, punctuation other than hyphens dropped, spaces
    to hyphens (inline code and link markup count as punctuation and text)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for match in HEADING.finditer(FENCE.sub("", page.read_text(encoding="utf-8"))):
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    return [m.group(1) for m in LINK.finditer(without_code(page.read_text(encoding="utf-8")))
            if not m.group(1).startswith(EXTERNAL)]


def test_there_are_pages_and_links() -> None:
    assert DOCS, "docs/*.md: none found"
    assert all(links(page) for page in PAGES), "a page without a single relative link"


@pytest.mark.parametrize("page", PAGES, ids=ids(PAGES))
def test_every_relative_link_reaches_a_file_and_a_heading(page: Path) -> None:
    broken: list[str] = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file or folder")
        elif dest != REPO and REPO not in dest.parents:
            broken.append(f"{target}: outside the repository")
        elif anchor and (dest.suffix != ".md" or anchor not in anchors(dest)):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(REPO)}")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=ids(PAGES))
def test_every_tuner_path_named_in_code_exists(page: Path) -> None:
    missing: set[str] = set()
    for code in code_of(page.read_text(encoding="utf-8")):
        for name in TUNER_PATH.findall(code):
            name = name.rstrip(".")
            pattern = re.sub(r"<[^>]*>", "*", name)
            if "*" in pattern:
                if not any(REPO.glob(pattern.rstrip("/"))):
                    missing.add(name)
            elif not (REPO / pattern).exists():
                missing.add(name)
    assert not missing, f"{page.relative_to(REPO)} names paths that do not exist: {sorted(missing)}"


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(REPO / t.partition("#")[0]).resolve() for t in links(README)}
    assert not [p.name for p in DOCS if p.resolve() not in linked]


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move reference text to docs/"


def test_the_readme_opens_with_its_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    first = FENCE.search(text)
    assert first is not None
    assert "\n## " not in text[:first.start()], "the commands come before the first section"
    commands = [line for line in first.group(0).splitlines()[1:-1] if line.strip()]
    assert len(commands) == 2
    assert commands[0].startswith("bash .ci/setup && .venv/bin/tune ")
    assert commands[1].startswith(
        "bash .ci/setup --llama-in-background && .venv/bin/python -m pytest -q")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert commands[1] in ci, "CI runs the README's second command as it is written"


def test_the_architecture_map_fits_on_a_screen() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    start = lines.index("## Architecture")
    end, fenced = len(lines), False
    for i in range(start + 1, len(lines)):
        fenced ^= lines[i].startswith(("```", "~~~"))
        if not fenced and re.match(r"#{1,2} ", lines[i]):
            end = i
            break
    section = "\n".join(lines[start:end]).rstrip().splitlines()
    assert len(section) <= 30, f"## Architecture is {len(section)} lines"


@pytest.mark.parametrize(("heading", "anchor"), [
    ("## What happens when something fails", "what-happens-when-something-fails"),
    ("### Lossy knobs and the quality check", "lossy-knobs-and-the-quality-check"),
    ("## Trade-offs and deployment", "trade-offs-and-deployment"),
    ("## One trial, one outcome", "one-trial-one-outcome"),
    ("## `tune export`: formats", "tune-export-formats"),
])
def test_slugs_follow_github(heading: str, anchor: str) -> None:
    assert slug(heading.lstrip("# ")) == anchor
