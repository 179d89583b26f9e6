"""The bench command's list of experiments."""

from __future__ import annotations

from speakstream.bench.experiments import EXPERIMENTS
from speakstream.cli.bench import EXPERIMENT_NAMES


def test_the_help_names_every_experiment_in_order() -> None:
    assert list(EXPERIMENTS) == EXPERIMENT_NAMES
