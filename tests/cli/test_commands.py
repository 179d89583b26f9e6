"""The command line, end to end, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from speakstream.audio.decode import decode
from speakstream.bench.asr import Recognizer, wer
from speakstream.server.serve import ThreadedServer


def speakstream(*args: str, stdin: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "speakstream", *args], input=stdin, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.model
def test_voices_lists_all_54(tmp_path: Path) -> None:
    result = speakstream("voices", "--json")
    listing = json.loads(result.stdout)
    assert len(listing["voices"]) == 54
    emma = {"id": "bf_emma", "name": "bf_emma", "language": "en-gb", "language_name": "British English"}
    assert {**emma, "gender": "female"} in listing["voices"]
    assert [g["language"] for g in listing["languages"]] == [
        "en-us",
        "en-gb",
        "es",
        "fr-fr",
        "hi",
        "it",
        "ja",
        "pt-br",
        "zh",
    ]
    assert sum(len(g["voices"]) for g in listing["languages"]) == 54


@pytest.mark.model
@pytest.mark.asr
def test_say_reads_stdin_and_writes_speech(tmp_path: Path, asr: Recognizer) -> None:
    out = tmp_path / "out.mp3"
    text = "Reading this from standard input works fine."
    result = speakstream("say", "-", "-o", str(out), "--voice", "bm_george", "--speed", "1.1", stdin=text)
    assert result.returncode == 0, result.stderr
    assert "RTF" in result.stderr
    samples, rate = decode(out.read_bytes(), "mp3")
    assert wer(text, asr.transcribe(samples, rate).text) <= 0.05


def test_say_through_a_server(fake_server: ThreadedServer, tmp_path: Path) -> None:
    out = tmp_path / "remote.wav"
    result = speakstream("say", "Through the server.", "-o", str(out), "--server", fake_server.url)
    assert result.returncode == 0, result.stderr
    samples, rate = decode(out.read_bytes(), "wav")
    assert rate == 24_000 and len(samples) > 0


def test_bad_speed_is_one_clear_line(fake_server: ThreadedServer, tmp_path: Path) -> None:
    result = speakstream("say", "Hi.", "-o", str(tmp_path / "x.wav"), "--server", fake_server.url, "--speed", "9")
    assert result.returncode == 2 and "invalid_speed" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "code", "hint"),
    [
        (("",), "empty_text", "nothing speakable"),
        (("   ",), "empty_text", "nothing speakable"),
        (("Hi.", "--speed", "9"), "invalid_speed", "between"),
    ],
)
def test_say_refuses_what_the_server_refuses_before_any_work(
    tmp_path: Path, args: tuple[str, ...], code: str, hint: str
) -> None:
    """The same codes and hints as the server, a non-zero exit, and no file left behind."""
    out = tmp_path / "out.wav"
    result = speakstream("say", *args, "-o", str(out), "--model-dir", str(tmp_path / "none"))
    assert result.returncode == 2 and f"[{code}]" in result.stderr and hint in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and not list(tmp_path.iterdir())


def test_say_names_the_formats_when_the_extension_is_none_of_them(tmp_path: Path) -> None:
    result = speakstream("say", "Hi.", "-o", str(tmp_path / "out.xyz"))
    assert result.returncode == 2 and "[invalid_format]" in result.stderr and ".mp3" in result.stderr
    assert "--format" in result.stderr and not list(tmp_path.iterdir())
    result = speakstream("say", "Hi.", "-o", str(tmp_path / "out.xyz"), "--format", "nope")
    assert result.returncode == 2 and "[invalid_format]" in result.stderr and "mp3" in result.stderr


def test_say_through_a_server_names_an_unknown_voice_and_the_closest(
    fake_server: ThreadedServer, tmp_path: Path
) -> None:
    result = speakstream("say", "Hi.", "-o", str(tmp_path / "x.wav"), "--server", fake_server.url, "--voice", "af_hart")
    assert result.returncode == 2 and "unknown_voice" in result.stderr and "af_heart" in result.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.model
def test_say_names_an_unknown_voice_and_the_closest_ones(tmp_path: Path) -> None:
    for voice, close in (("nobody", "unknown voice 'nobody'"), ("heart", "af_heart")):
        result = speakstream("say", "Hi.", "-o", str(tmp_path / "x.wav"), "--voice", voice)
        assert result.returncode == 2 and "[unknown_voice]" in result.stderr and close in result.stderr
        assert "speakstream voices" in result.stderr and not list(tmp_path.iterdir())


def test_agent_chat_without_a_sound_device_writes_files(fake_server: ThreadedServer, tmp_path: Path) -> None:
    result = speakstream(
        "agent",
        "chat",
        "--server",
        fake_server.ws_url,
        "--replay",
        "--reply",
        "greeting",
        "--tokens-per-s",
        "400",
        "--out",
        str(tmp_path),
        stdin="Hello?\n/quit\n",
    )
    assert result.returncode == 0, result.stderr
    assert "travel assistant" in result.stdout
    samples, rate = decode((tmp_path / "reply-1.wav").read_bytes(), "wav")
    assert len(samples) / rate > 1.0


def test_agent_demo_json_against_a_server(fake_server: ThreadedServer, tmp_path: Path) -> None:
    result = speakstream(
        "agent",
        "demo",
        "--server",
        fake_server.ws_url,
        "--replay",
        "--trials",
        "2",
        "--reply",
        "weather",
        "--tokens-per-s",
        "200",
        "--json",
        "--wav",
        str(tmp_path / "bidi.wav"),
    )
    assert result.returncode == 0, result.stderr
    [(label, data)] = json.loads(result.stdout).items()
    assert "replay" in label and "200 tokens/s" in label
    assert len(data["bidi"]["ttfa_ms"]) == len(data["batch"]["ttfa_ms"]) == 2
    assert data["ratio"] > 0 and data["reply"].startswith("It's 18 degrees")
    assert data["llm"]["tokens_per_s_alone"] > 100  # the replay's pace, measured back from its deltas
    assert (tmp_path / "bidi.wav").stat().st_size > 44


@pytest.mark.llm
@pytest.mark.slow
def test_agent_demo_speaks_the_local_models_reply_beside_the_replay(fake_server: ThreadedServer) -> None:
    """By default the demo fetches SmolLM2 (once), lets it answer the prompt through the embedded
    llama.cpp, and runs the replay at a hosted model's pace beside it, each labelled with its pace."""
    result = speakstream("agent", "demo", "--server", fake_server.ws_url, "--trials", "1", "--json")
    assert result.returncode == 0, result.stderr
    local, replay = json.loads(result.stdout).items()
    assert local[0].startswith("SmolLM2-135M-Instruct") and "replay" in replay[0]
    figures = local[1]["llm"]
    assert figures["ttft_ms"] > 0 and figures["tokens_per_s_alone"] > 1
    assert len(local[1]["reply"].split()) >= 5  # the model's own words, not the replay's
    assert local[1]["reply"] != replay[1]["reply"]
