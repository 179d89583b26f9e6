"""Find or install a Chromium for the browser tests (Debian's package, driven by Playwright)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
]


def chromium() -> tuple[str | None, str]:
    """(path, reason): a Chromium binary, installing Debian's when this machine allows it."""
    for path in CANDIDATES:
        if Path(path).exists():
            return path, "found"
    if not shutil.which("apt-get") or os.geteuid() != 0:
        return None, "no Chromium, and apt-get is not available to root here"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True, timeout=300, env=env)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "chromium"], check=True, capture_output=True, timeout=600, env=env
        )
    except (subprocess.SubprocessError, OSError) as exc:
        return None, f"installing Debian's chromium failed: {exc}"
    return ("/usr/bin/chromium", "installed") if Path("/usr/bin/chromium").exists() else (None, "not installed")
