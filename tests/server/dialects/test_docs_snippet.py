"""docs/dialects.md's "Use with pipecat / LiveKit" snippet runs as written (so it cannot rot): every
client it builds points at speakstream; test_frameworks.py drives the same classes through whole
replies against a real server."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aiohttp

PAGE = Path(__file__).resolve().parents[3] / "docs" / "dialects.md"


class _Assignments(dict[str, Any]):
    """The snippet's namespace, keeping every value given to ``tts`` (it is reassigned)."""

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        self.clients: list[Any] = []

    def __setitem__(self, name: str, value: Any) -> None:
        if name == "tts":
            self.clients.append(value)
        super().__setitem__(name, value)


def _snippet() -> str:
    section = PAGE.read_text().split("# Use with pipecat / LiveKit", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the section has no python snippet"
    return match.group(1)


def _url(client: Any) -> str:
    opts = getattr(client, "_opts", None)
    return str(getattr(client, "_url", None) or getattr(client, "_base_url", None) or opts.base_url)


async def test_the_readme_snippet_builds_clients_pointed_at_speakstream() -> None:
    async with aiohttp.ClientSession() as session:
        namespace = _Assignments(KEY="a-key", session=session)
        exec(compile(_snippet(), "docs/dialects.md", "exec"), {}, namespace)  # our own page
    built = {f"{type(c).__module__.split('.')[-2]}.{type(c).__name__}": _url(c) for c in namespace.clients}
    assert set(built) == {
        "elevenlabs.ElevenLabsTTSService",
        "cartesia.CartesiaTTSService",
        "deepgram.DeepgramTTSService",
        "elevenlabs.ElevenLabsHttpTTSService",
        "elevenlabs.TTS",
        "cartesia.TTS",
        "deepgram.TTS",
    }
    assert all("localhost:8080" in url for url in built.values()), built
    environment = namespace["client"]._client_wrapper.get_environment()  # Deepgram's SDK
    assert "localhost:8080" in environment.base and "localhost:8080" in environment.production
