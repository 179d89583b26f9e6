"""``speakstream loadtest``."""

from __future__ import annotations

from typing import Any


def register(commands: Any) -> None:
    return None
