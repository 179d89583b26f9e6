"""The Reliability table is rendered from a loadtest run's results: a row for each result of each
suite that ran, in suite order (the committed run, ``docs/reliability.json``, renders in full)."""

from __future__ import annotations

import json
from pathlib import Path

from speakstream.loadtest.report import render, rows

RUN = json.loads((Path(__file__).parents[2] / "docs" / "reliability.json").read_text())


def test_every_suite_of_the_committed_run_has_its_rows_in_order() -> None:
    made = rows(RUN, "speakstream loadtest")
    suites = [row[2].strip("`").split()[-1] for row in made]
    order = ["load", "overload", "faults", "soak", "fuzz", "abuse"]
    ran = [s for s in order if s in RUN["suites"]]
    assert [s for s in dict.fromkeys(suites)] == ran and all(row[1] for row in made)


def test_a_run_of_one_suite_renders_only_its_rows() -> None:
    run = {**RUN, "suites": {"soak": RUN["suites"]["soak"]}}
    text = render(run, "speakstream loadtest")
    assert text.count("`speakstream loadtest soak`") == 2 and "overload" not in text.split("\n\n", 1)[1]
