"""Where the server may write: one check shared by what it keeps (dictionaries) and what it
derives at start (optimised weights), so a read-only root is found the same way everywhere."""

from __future__ import annotations

import tempfile
from pathlib import Path


def unwritable(directory: Path) -> str | None:
    """Why ``directory`` (made if missing) cannot take a file, or None. Found by writing one:
    permissions do not tell a read-only mount apart, and root passes every permission check."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        return f"{directory}: {exc.strerror or exc}"
    return None
