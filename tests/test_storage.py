"""Where the server may write, found by writing: a read-only mount and a path that cannot be a
directory are told apart from a writable folder (as root, permissions alone would pass them all)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from speakstream.storage import unwritable


def test_a_writable_folder_is_made_and_passes(tmp_path: Path) -> None:
    assert unwritable(tmp_path / "made" / "here") is None
    assert (tmp_path / "made" / "here").is_dir()
    assert list((tmp_path / "made" / "here").iterdir()) == []  # the probe leaves nothing


def test_a_folder_that_cannot_be_made_says_why(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    reason = unwritable(tmp_path / "file" / "data")
    assert reason is not None and str(tmp_path / "file" / "data") in reason


def test_a_read_only_mount_is_found_even_as_root(tmp_path: Path) -> None:
    """In a mount namespace of its own, ``tmp_path`` mounted read-only (what a container's
    read-only root is): root's permission bits say writable, the write says no."""
    probe = f"from pathlib import Path; import speakstream.storage as s; print(s.unwritable(Path({str(tmp_path)!r})))"
    script = f'mount --bind -o ro "$0" "$0" && exec {sys.executable} -c "$1"'
    done = subprocess.run(
        ["unshare", "--mount", "sh", "-c", script, str(tmp_path), probe], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "Read-only file system" in done.stdout
