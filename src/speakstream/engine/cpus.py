"""The CPUs this process may use: its affinity (``taskset``, a cpuset) and a container's CPU quota,
not the machine's core count, so threads and lanes never outnumber the cores they run on."""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")


def available_cpus(affinity: set[int] | None = None, cgroup: Path = CGROUP) -> int:
    """The CPUs of ``affinity`` (default: this process's), no more than the cgroup's quota
    (rounded down: a thread past the quota is throttled mid-inference), at least one."""
    count = len(affinity if affinity is not None else _affinity())
    quota = cpu_quota(cgroup)
    return max(1, min(count, int(quota)) if quota is not None else count)


def cpu_quota(cgroup: Path = CGROUP) -> float | None:
    """CPUs a second the cgroup may use (cgroup v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``), None: no quota."""
    with suppress(OSError, ValueError):
        quota, period = (cgroup / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    for folder in (cgroup / "cpu", cgroup / "cpu,cpuacct"):
        with suppress(OSError, ValueError):
            quota_us = int((folder / "cpu.cfs_quota_us").read_text())
            period_us = int((folder / "cpu.cfs_period_us").read_text())
            return None if quota_us <= 0 else quota_us / period_us
    return None


def _affinity() -> set[int]:
    if hasattr(os, "sched_getaffinity"):
        return os.sched_getaffinity(0)
    return set(range(os.cpu_count() or 1))
