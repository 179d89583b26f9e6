from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from speakstream.bench.report import END, START, render, update_readme


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


def _run(**extra: Any) -> dict[str, Any]:
    return {
        "command": "speakstream bench",
        "date": "2026-12-01 12:00 UTC",
        "quick": False,
        "device": {"cpu": "cpu", "cores": 2, "providers": ["CPUExecutionProvider"]},
        "experiments": {"text": {"rows": 1}},
        "seconds": {"text": 9.1},
        **extra,
    }


MODULES: Any = {"text": SimpleNamespace(TITLE="Text", markdown=lambda result: "| text |")}


def test_the_report_shows_the_engine_speed_measured_before_each_experiment() -> None:
    report = render(_run(engine_rtf={"text": 0.412}), MODULES, {}, image_dir="")
    assert "| experiment | seconds | engine RTF just before" in report and "| text | 9.1 | 0.412 |" in report


def test_a_run_from_before_the_probe_still_renders() -> None:
    report = render(_run(), MODULES, {}, image_dir="")
    assert "| experiment | seconds |\n" in report and "| text | 9.1 |" in report


def test_the_header_names_the_vector_extension_when_known() -> None:
    header = render(_run(device={"cpu": "Xeon", "vector": "AVX-512", "cores": 2}), MODULES, {}, image_dir="")
    assert header.startswith("Measured with `speakstream bench` on 2026-12-01 12:00 UTC: Xeon (AVX-512), 2 cores")
    old = render(_run(device={"cpu": "EPYC", "cores": 2}), MODULES, {}, image_dir="")
    assert ": EPYC, 2 cores" in old


def test_a_rerun_of_some_experiments_keeps_the_others_with_their_dates() -> None:
    from speakstream.bench.report import merged

    earlier = _run(experiments={"text": {"rows": 1}, "cache": {"rows": 2}}, seconds={"text": 9.1, "cache": 5.0})
    later = _run(date="2026-12-02 08:00 UTC", command="speakstream bench text", experiments={"text": {"rows": 3}})
    later["engine_rtf"] = {"text": 0.3}
    run = merged(earlier, later, ["text", "cache"])
    assert run["experiments"] == {"text": {"rows": 3}, "cache": {"rows": 2}}
    assert run["dates"] == {"text": "2026-12-02 08:00 UTC", "cache": "2026-12-01 12:00 UTC"}
    assert run["command"] == "speakstream bench" and run["rerun_command"] == "speakstream bench text"
    elsewhere = {**later, "device": {"cpu": "other"}}  # another machine: nothing of the earlier run is kept
    assert merged(earlier, elsewhere, ["text", "cache"])["experiments"] == later["experiments"]
    assert merged(None, later, ["text"]) is later
