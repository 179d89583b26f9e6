"""``speakstream voices`` saving, listing and deleting, in the local data directory and on a
running server; ``speakstream phonemes`` locally and remotely."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from speakstream.engine.fake import FakeEngine
from speakstream.loadtest.servers import start_server
from speakstream.server.serve import ThreadedServer


def speakstream(*args: str, data: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPEAKSTREAM_DATA_DIR": str(data)}
    return subprocess.run(
        [sys.executable, "-m", "speakstream", *args], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ThreadedServer]:
    running = start_server(FakeEngine(), data_dir=tmp_path / "server", cache_mb=0)
    yield running
    running.stop()


def test_voices_are_saved_listed_and_deleted_locally(tmp_path: Path) -> None:
    saved = speakstream("voices", "save", "host", "--blend", "af_heart:2,af_bella:1", "--speed", "1.1", data=tmp_path)
    assert saved.returncode == 0, saved.stderr
    assert "saved host: af_heart:0.666667,af_bella:0.333333 at 1.1x" in saved.stdout
    assert json.loads((tmp_path / "voices" / "host.json").read_text())["speed"] == 1.1
    again = speakstream("voices", "save", "host", "--blend", "bm_george", data=tmp_path)  # replaces it
    assert again.returncode == 0 and "bm_george" in again.stdout
    listed = json.loads(speakstream("voices", "list", "--json", data=tmp_path).stdout)
    assert [v["name"] for v in listed["saved"]] == ["host"] and len(listed["voices"]) == 54
    clash = speakstream("voices", "save", "af_bella", "--blend", "af_heart", data=tmp_path)
    assert clash.returncode == 2 and "voice_name_taken" in clash.stderr
    assert speakstream("voices", "delete", "host", data=tmp_path).returncode == 0
    gone = speakstream("voices", "delete", "host", data=tmp_path)
    assert gone.returncode == 2 and "unknown_voice" in gone.stderr


def test_voices_are_saved_listed_and_deleted_on_a_server(server: ThreadedServer, tmp_path: Path) -> None:
    remote = ("--server", server.url)
    saved = speakstream("voices", "save", "desk", "--blend", "am_adam", "--language", "es", *remote, data=tmp_path)
    assert saved.returncode == 0, saved.stderr
    assert httpx.get(f"{server.url}/v1/saved-voices/desk").json()["language"] == "es"
    listed = json.loads(speakstream("voices", "list", "--json", *remote, data=tmp_path).stdout)
    assert [v["name"] for v in listed["saved"]] == ["desk"] and len(listed["voices"]) == 54
    table = speakstream("voices", "list", *remote, data=tmp_path).stdout
    assert "1 saved voice\n" in table or ("1 saved voice " in table and "desk" in table)
    assert speakstream("voices", "delete", "desk", *remote, data=tmp_path).returncode == 0
    assert httpx.get(f"{server.url}/v1/saved-voices/desk").status_code == 404
    bad = speakstream("voices", "save", "x", "--blend", "af_heart,af_heart", *remote, data=tmp_path)
    assert bad.returncode == 2 and "invalid_blend" in bad.stderr


def test_phonemes_locally_and_from_a_server(server: ThreadedServer, tmp_path: Path) -> None:
    local = json.loads(
        speakstream("phonemes", "Hola, tengo 3 gatos.", "--language", "es", "--json", data=tmp_path).stdout
    )
    remote = speakstream(
        "phonemes", "Hola, tengo 3 gatos.", "--language", "es", "--json", "--server", server.url, data=tmp_path
    )
    assert json.loads(remote.stdout) == local
    assert local["phonemes"] == "ˈola, tˈɛŋɡo tɾˈes ɣˈatos." and local["words"][2] == {"text": "3", "phonemes": "tɾˈes"}
    shown = speakstream("phonemes", "tomato", data=tmp_path)
    assert shown.stdout.strip() == "təmˈATO" and "1 word in en-us" in shown.stderr
    bad = speakstream("phonemes", "Hi.", "--language", "tlh", data=tmp_path)
    assert bad.returncode == 2 and "unsupported_language" in bad.stderr
