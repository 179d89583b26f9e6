"""Server settings: safe defaults when the server is exposed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from speakstream.config import ServerConfig
from speakstream.errors import InvalidInput


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_needs_no_key(host: str) -> None:
    assert ServerConfig(host=host).exposure_problem() is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.7", "speech.example.com"])
def test_any_other_address_needs_a_key_or_insecure(host: str) -> None:
    problem = ServerConfig(host=host).exposure_problem()
    assert problem is not None and "--insecure" in problem
    assert ServerConfig(host=host, api_key="k").exposure_problem() is None
    assert ServerConfig(host=host, insecure=True).exposure_problem() is None


@pytest.mark.parametrize("key", ["", "   "])
def test_an_empty_key_is_an_error_not_auth_off(key: str) -> None:
    with pytest.raises(InvalidInput, match="empty"):
        ServerConfig(api_key=key)
    with pytest.raises(InvalidInput, match="empty"):
        ServerConfig.from_env({"SPEAKSTREAM_API_KEY": key})


def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "speakstream", "serve", "--fake-engine", "--port", "0", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_serve_refuses_an_exposed_address_without_a_key() -> None:
    result = _serve("--host", "0.0.0.0")
    assert result.returncode == 2 and "without an API key" in result.stderr


def test_serve_refuses_an_empty_key_file(tmp_path: Path) -> None:
    empty = tmp_path / "key"
    empty.write_text("\n")
    result = _serve("--host", "0.0.0.0", "--api-key-file", str(empty))
    assert result.returncode != 0 and "empty" in result.stderr


def test_languages_to_preload_are_read_and_checked_at_startup() -> None:
    config = ServerConfig.from_env({"SPEAKSTREAM_LANGUAGES": "es, zh"})
    assert config.languages == ("es", "zh") and config.engine_config().languages == ("es", "zh")
    with pytest.raises(InvalidInput) as caught:
        ServerConfig.from_env({"SPEAKSTREAM_LANGUAGES": "es,klingon"})
    assert caught.value.code == "unsupported_language"


def test_a_public_address_caps_each_client_at_half_the_queue_by_default() -> None:
    assert ServerConfig(host="127.0.0.1").client_queue_cap == 0
    assert ServerConfig(host="0.0.0.0", api_key="k", queue_depth=64).client_queue_cap == 32
    assert ServerConfig(host="0.0.0.0", api_key="k", queue_depth=4).client_queue_cap == 3  # one reply's slots
    assert ServerConfig(host="127.0.0.1", max_client_queue=9).client_queue_cap == 9


def test_the_decoder_is_chosen_by_the_engine_unless_set() -> None:
    assert ServerConfig.from_env({}).engine_config().decoder == "auto"
    assert ServerConfig.from_env({"SPEAKSTREAM_DECODER": "float"}).engine_config().decoder == "float"
    assert ServerConfig.from_env({}).engine_config().crowded_decoder == "auto"
    crowded = ServerConfig.from_env({"SPEAKSTREAM_CROWDED_DECODER": "same"}).engine_config().crowded_decoder
    assert crowded == "same"


def test_lanes_are_read_under_their_old_name_too_and_the_new_one_wins() -> None:
    assert ServerConfig.from_env({"SPEAKSTREAM_WORKERS": "1"}).lanes == 1
    assert ServerConfig.from_env({"SPEAKSTREAM_WORKERS": "1", "SPEAKSTREAM_LANES": "2"}).lanes == 2
    assert ServerConfig.from_env({}).lanes == 0
