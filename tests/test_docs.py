"""The README is a front door that fits on a few screens, and every page it leads to is there: each
relative link and anchor in README.md and docs/*.md resolves, and every setting is documented."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from speakstream.config import ServerConfig

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _slugs(page: Path) -> set[str]:
    """GitHub's anchors for the headings of ``page`` (a repeated heading gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    fenced = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if fenced or not (match := re.match(r"#{1,6} (.+)", line)):
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return set(seen)


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return [a or b for a, b in LINK.findall(text)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    broken = []
    for link in _links(page):
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists() or (anchor and target.suffix == ".md" and anchor not in _slugs(target)):
            broken.append(link)
    assert not broken, broken


def test_the_readme_is_a_front_door() -> None:
    readme = (ROOT / "README.md").read_text()
    assert readme.count("\n") <= 300
    for page in PAGES[1:]:
        assert f"docs/{page.name}" in readme, f"the README does not lead to {page.name}"


def test_every_setting_is_documented() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text()
    missing = [f.name for f in dataclasses.fields(ServerConfig) if f"SPEAKSTREAM_{f.name.upper()}" not in page]
    assert not missing, missing
