"""The server as a container runs it, without Docker: a read-only home and assets folder (each
mounted read-only in a mount namespace of the server's own, ``unshare``), state on a data folder
that may be missing, a CPU the shared weights were not made for, and a start that cannot succeed."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest

from speakstream.bench.process import ServerProcess
from speakstream.engine.model.assets import cache_dir

RULES = [{"type": "alias", "string_to_replace": "TTS", "alias": "speech"}]


def read_only(*paths: Path, cpuinfo: Path | None = None) -> list[str]:
    """A launcher running its command with ``paths`` mounted read-only (and ``cpuinfo`` over
    /proc/cpuinfo: another CPU, as far as the server can tell)."""
    mounts = [f"mount --bind -o ro {shlex.quote(str(p))} {shlex.quote(str(p))}" for p in paths]
    if cpuinfo is not None:
        mounts.append(f"mount --bind {shlex.quote(str(cpuinfo))} /proc/cpuinfo")
    return ["unshare", "--mount", "sh", "-c", " && ".join(mounts) + ' && exec "$@"', "read-only"]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with nothing in it, where the server's default data folder would be."""
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def _env(tmp_path: Path, home: Path, **settings: str) -> dict[str, str]:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local" / "share"),  # the default data folder, on the read-only home
        "SPEAKSTREAM_CACHE_DIR": str(cache_dir()),  # the assets, wherever the home is
        "TMPDIR": str(tmp_path / "tmp"),  # /tmp: writable, as the image's tmpfs is
        "SPEAKSTREAM_CACHE_MB": "0",
        **settings,
    }


@pytest.fixture
def lexicons(tmp_path: Path) -> Path:
    (tmp_path / "lexicons").mkdir()
    (tmp_path / "lexicons" / "acronyms.json").write_text(json.dumps(RULES))
    return tmp_path / "lexicons"


def _serve(env: dict[str, str], launcher: Sequence[str]) -> Iterator[ServerProcess]:
    server = ServerProcess(env=env, launcher=launcher).wait_ready(timeout=120)
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.model
def test_a_read_only_home_and_assets_folder_serve_with_the_prebuilt_weights(
    tmp_path: Path, home: Path, lexicons: Path
) -> None:
    voices = tmp_path / "voices"
    voices.mkdir()
    (voices / "desk.json").write_text(json.dumps({"blend": "af_heart:0.5,af_bella:0.5"}))
    env = _env(tmp_path, home, SPEAKSTREAM_LEXICONS_DIR=str(lexicons), SPEAKSTREAM_VOICES_DIR=str(voices))
    for server in _serve(env, read_only(home, cache_dir(), lexicons, voices)):
        ping = httpx.get(f"{server.url}/ping").json()
        assert (ping["weights"], ping["store"]) == ("assets", "read-only")
        made = httpx.post(
            f"{server.url}/v1/pronunciation-dictionaries/add-from-rules", json={"name": "x", "rules": RULES}
        )
        assert made.status_code == 507 and made.json()["detail"]["status"] == "read_only_store", made.text
        assert "data directory is not writable" in made.json()["detail"]["message"]
        spoken = httpx.post(
            f"{server.url}/invocations",
            json={"text": "TTS works.", "pronunciation_dictionaries": ["acronyms"], "format": "pcm"},
            timeout=60,
        )
        assert spoken.status_code == 200 and len(spoken.content) > 24_000  # the read-only dictionary speaks
        saved = httpx.post(f"{server.url}/v1/saved-voices", json={"name": "new", "blend": "af_heart"})
        assert saved.status_code == 507 and saved.json()["error"]["code"] == "read_only_store"
        body = {"text": "Saved voices work.", "voice": "desk", "format": "pcm"}
        assert httpx.post(f"{server.url}/invocations", json=body, timeout=60).status_code == 200  # the voice file
    assert list(home.iterdir()) == []  # nothing was written, nothing half-made


@pytest.mark.model
def test_on_another_cpu_the_weights_are_made_in_the_data_folder_then_found_there(tmp_path: Path, home: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    other = [f"{line} speakstream_other_cpu" if line.startswith("flags") else line for line in lines]
    cpuinfo.write_text("\n".join(other))
    data = tmp_path / "data"
    env = _env(tmp_path, home, SPEAKSTREAM_DATA_DIR=str(data))
    seen = []
    for _ in range(2):  # made at the first start, found at the second
        for server in _serve(env, read_only(home, cache_dir(), cpuinfo=cpuinfo)):
            seen.append(httpx.get(f"{server.url}/ping").json()["weights"])
    assert seen == ["built", "cache"]
    assert list((data / "optimized").iterdir()) and not list((tmp_path / "tmp").glob("speakstream/optimized/*"))
    shared = _env(tmp_path, home)  # no writable data folder: made in the temporary directory
    for server in _serve(shared, read_only(home, cache_dir(), cpuinfo=cpuinfo)):
        ping = httpx.get(f"{server.url}/ping").json()
        assert (ping["weights"], ping["store"]) == ("built", "read-only")
    assert list((tmp_path / "tmp" / "speakstream" / "optimized").iterdir())


def _exit_of(args: Sequence[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "speakstream", "serve", "--port", "0", *args]
    return subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=120)


def test_a_server_without_its_model_exits_with_the_reason(tmp_path: Path) -> None:
    done = _exit_of(["--model-dir", str(tmp_path / "no-model")], {})
    assert done.returncode != 0
    assert "missing_asset" in done.stderr and "speakstream assets fetch" in done.stderr, done.stderr[-2000:]


def test_a_required_data_folder_that_cannot_be_written_stops_the_start(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    env = {"SPEAKSTREAM_DATA_DIR": str(tmp_path / "file" / "data"), "SPEAKSTREAM_DATA_REQUIRED": "true"}
    done = _exit_of(["--fake-engine"], env)
    assert done.returncode != 0 and "read_only_store" in done.stderr, done.stderr[-2000:]
    assert "data_required" in done.stderr


def test_a_voice_file_that_is_not_a_voice_stops_the_start(tmp_path: Path) -> None:
    (tmp_path / "voices").mkdir()
    (tmp_path / "voices" / "broken.json").write_text(json.dumps({"blend": "af_heart:1,af_heart:1"}))
    done = _exit_of(["--fake-engine"], {"SPEAKSTREAM_VOICES_DIR": str(tmp_path / "voices")})
    assert done.returncode != 0 and "broken.json" in done.stderr and "twice" in done.stderr, done.stderr[-2000:]
