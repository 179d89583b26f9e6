from pathlib import Path

import pytest

from speakstream.bench.report import END, START, update_readme


def test_readme_section_is_replaced_between_markers(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{START}\nold\n{END}\n\nafter\n")
    update_readme(readme, "| new | table |")
    text = readme.read_text()
    assert "old" not in text and "| new | table |" in text and text.endswith("after\n")


def test_missing_markers_are_an_error(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# no markers\n")
    with pytest.raises(ValueError, match="markers"):
        update_readme(readme, "x")
