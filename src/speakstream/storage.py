"""Where the server may write: one check shared by what it keeps (dictionaries) and what it
derives at start (optimised weights), so a read-only root is found the same way everywhere."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


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


def write_json(path: Path, data: Any) -> None:
    """``data`` as ``path``'s JSON, atomically: a crash leaves the old file or the new one, never
    half of one."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
    os.replace(temporary, path)
