"""The CPUs the engine sizes its threads and lanes by: the process's affinity and its container's
quota, not the machine's core count (a server under ``taskset -c 0`` ran two threads on one core)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from speakstream.engine.config import EngineConfig, cores, engine_lanes
from speakstream.engine.cpus import available_cpus, cpu_quota


def test_no_quota_leaves_the_affinity(tmp_path: Path) -> None:
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cpu_quota(tmp_path) is None
    assert available_cpus({0, 1, 2, 3}, tmp_path) == 4


@pytest.mark.parametrize(("quota", "cpus"), [("150000 100000", 1), ("200000 100000", 2), ("50000 100000", 1)])
def test_a_cgroup_v2_quota_caps_the_cpus_rounded_down(tmp_path: Path, quota: str, cpus: int) -> None:
    (tmp_path / "cpu.max").write_text(quota + "\n")
    assert available_cpus({0, 1, 2, 3}, tmp_path) == cpus


def test_a_cgroup_v1_quota_caps_the_cpus(tmp_path: Path) -> None:
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cpu_quota(tmp_path) == 1.0 and available_cpus({0, 1}, tmp_path) == 1
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert available_cpus({0, 1}, tmp_path) == 2


def test_one_core_by_affinity_is_one_thread_and_one_lane() -> None:
    """``taskset -c 0``: the engine sizes itself to the one core it may use."""
    probe = (
        "from speakstream.engine.config import EngineConfig, cores, engine_lanes;"
        "c = EngineConfig(); print(cores(c), engine_lanes(c, ['CPUExecutionProvider']))"
    )
    done = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "1"]


def test_set_threads_win_over_what_the_process_may_use() -> None:
    config = EngineConfig(intra_op_threads=3)
    assert cores(config) == 3 and engine_lanes(config, ["CPUExecutionProvider"]) == 2
