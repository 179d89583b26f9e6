"""One copy of the model's weights in memory for every session of every part (CPU only).

ONNX Runtime gives each session its own weights: its graph optimisations rewrite them (fusions,
constant folding, the convolutions' blocked layout) and it prepacks them for its kernels, so the
engine's nine sessions (front, decoder and crowded decoder, each a wide and two narrow copies)
held about nine copies. Instead each part is optimised once for this machine and ONNX Runtime
version and saved, its large weights moved to one file shared by all parts (the two decoders
have 58 of their 60-66 MB in common), deduplicated and aligned; every session then loads the
optimised graph with optimisation off and reads those weights in place from one memory map
(``SessionOptions.add_initializer``); only the wide copies of the front and the main decoder,
which a reply alone waits on, prepack theirs for speed. Activations come from one arena shared by
all sessions, shrunk after every run, and large buffers go back to the system when freed
(``release_memory``), so no session keeps the peak of the longest window it ever ran.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import platform
import shutil
import threading
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from speakstream.storage import unwritable

FORMAT = 1
"""Bumped when the saved layout changes: older ones are made again."""
INLINE_BYTES = 4096
"""Weights smaller than this stay in the graph (shapes ONNX Runtime reads while loading it)."""
ALIGN = 64
ONNX_DTYPES = {
    1: np.float32,
    2: np.uint8,
    3: np.int8,
    5: np.int16,
    6: np.int32,
    7: np.int64,
    9: np.bool_,
    10: np.float16,
}
MMAP_THRESHOLD = 256 * 1024
"""glibc: allocations this large or larger are mapped on their own and returned when freed."""

_lock = threading.Lock()
_arena_registered = False


def machine_key(sources: dict[str, Path]) -> str:
    """What an optimised graph depends on: ONNX Runtime's version, this CPU's instruction sets
    (the blocked layout differs with AVX-512) and the source graphs."""
    import onnxruntime as ort

    flags = ""
    with suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = line
                break
    stamp = [(name, p.stat().st_size, int(p.stat().st_mtime)) for name, p in sorted(sources.items())]
    raw = json.dumps([FORMAT, ort.__version__, platform.machine(), flags, stamp])
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the shared weights came from: ``assets`` (made beside the model, as an image is
    built), ``cache`` (made at an earlier start), ``built`` (made at this start) or ``unshared``
    (nowhere to make them: every session its own weights)."""

    weights: SharedWeights | None
    source: str
    detail: str
    """The directory used, or why none could be (for the log, never for a client)."""


def place(derived: Path, sources: dict[str, Path], caches: Sequence[Path] = ()) -> Placement:
    """The shared weights of ``sources`` for this machine: found beside the assets or in a cache,
    else made in the first of those that can be written; never written where it cannot be."""
    key = machine_key(sources)
    places = [derived / "optimized" / key, *(cache / key for cache in caches)]
    for index, directory in enumerate(places):
        if (directory / "weights.json").is_file():
            return Placement(SharedWeights(directory, sources), "cache" if index else "assets", str(directory))
    problems = []
    for directory in places:
        problem = unwritable(directory.parent)
        if problem is None:
            try:
                _build(directory, sources)
                return Placement(SharedWeights(directory, sources), "built", str(directory))
            except OSError as exc:  # a cache that fills up, or turns read-only, while they are made
                problem = f"{directory}: {exc.strerror or exc}"
        problems.append(problem)
    return Placement(None, "unshared", "; ".join(problems))


class SharedWeights:
    """The parts' optimised graphs and their one weights file in ``directory`` (``place`` makes them)."""

    def __init__(self, directory: Path, sources: dict[str, Path]) -> None:
        self.directory, self.sources = directory, sources
        self._map = np.memmap(directory / "weights.bin", dtype=np.uint8, mode="r")
        self._values: dict[str, list[tuple[str, Any]]] = {}

    def graph(self, part: str) -> Path:
        return self.directory / f"{part}.onnx"

    def values(self, part: str) -> list[tuple[str, Any]]:
        """``part``'s large weights as ONNX Runtime values over the memory map (made once)."""
        if part not in self._values:
            import onnxruntime as ort

            table = json.loads((self.directory / "weights.json").read_text())[part]
            self._values[part] = [
                (name, ort.OrtValue.ortvalue_from_numpy(self._array(offset, length, dtype, shape)))
                for name, offset, length, dtype, shape in table
            ]
        return self._values[part]

    def session(self, part: str, options: Any, providers: list[str], *, prepack: bool = False) -> Any:
        """A session of ``part`` on ``options`` reading the shared weights, the shared arena.
        ``prepack``: its kernels repack the weights they use for speed, a copy of its own (10 MB
        for the front, about 30 for a decoder)."""
        import onnxruntime as ort

        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        if not prepack:
            options.add_session_config_entry("session.disable_prepacking", "1")
        options.add_session_config_entry("session.use_env_allocators", "1")
        for name, value in self.values(part):
            options.add_initializer(name, value)
        return ort.InferenceSession(str(self.graph(part)), options, providers=providers)

    def _array(self, offset: int, length: int, dtype: int, shape: list[int]) -> np.ndarray[Any, Any]:
        return self._map[offset : offset + length].view(ONNX_DTYPES[dtype]).reshape(shape)


def _build(directory: Path, sources: dict[str, Path]) -> None:
    """Optimise each part for this machine, then move its large weights into one shared file,
    made in a staging directory that becomes ``directory`` whole or not at all."""
    staging = directory.with_name(directory.name + f".{os.getpid()}.tmp")
    staging.mkdir(parents=True, exist_ok=True)
    try:
        _optimise_into(staging, sources)
        staging.rename(directory)
    except OSError:
        if not (directory / "weights.json").is_file():  # else another process made them first
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _optimise_into(staging: Path, sources: dict[str, Path]) -> None:
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, numpy_helper

    blob, offsets, table = bytearray(), {}, {}
    for part, source in sources.items():
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.optimized_model_filepath = str(staging / f"{part}.full.onnx")
        options.log_severity_level = 3
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        model = onnx.load(str(staging / f"{part}.full.onnx"))
        entries = []
        for tensor in model.graph.initializer:
            array = numpy_helper.to_array(tensor)
            raw = array.tobytes()
            if len(raw) < INLINE_BYTES or tensor.data_type not in ONNX_DTYPES:
                continue
            key = hashlib.sha256(raw).digest()
            if key not in offsets:
                blob += b"\0" * (-len(blob) % ALIGN)
                offsets[key] = len(blob)
                blob += raw
            entries.append((tensor.name, offsets[key], len(raw), tensor.data_type, list(array.shape)))
            _external(tensor, offsets[key], len(raw))
            tensor.data_location = TensorProto.EXTERNAL
        onnx.save_model(model, str(staging / f"{part}.onnx"))
        (staging / f"{part}.full.onnx").unlink()
        table[part] = entries
    (staging / "weights.bin").write_bytes(bytes(blob))
    (staging / "weights.json").write_text(json.dumps(table))


def _external(tensor: Any, offset: int, length: int) -> None:
    """Point ``tensor`` at its bytes in the shared file (never read: the sessions are given them)."""
    for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
        tensor.ClearField(field)
    del tensor.external_data[:]
    for key, value in (("location", "weights.bin"), ("offset", str(offset)), ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value


def share_arena() -> None:
    """One activation arena for every session that asks for it (``session.use_env_allocators``),
    growing by what each allocation asks rather than doubling; once per process."""
    global _arena_registered
    import onnxruntime as ort

    with _lock:
        if _arena_registered:
            return
        info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
        ort.create_and_register_allocator(info, ort.OrtArenaCfg(0, 1, -1, -1))  # 1: kSameAsRequested
        _arena_registered = True


def shrink_after(options: Any) -> None:
    """Run options that give the shared arena's free chunks back when the run ends."""
    if _arena_registered:
        options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")


def release_memory() -> None:
    """glibc only: large blocks mapped on their own and the heap's free top trimmed, so memory a
    long window used goes back to the system when it is freed (else glibc keeps it)."""
    with suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, MMAP_THRESHOLD)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, MMAP_THRESHOLD)  # M_TRIM_THRESHOLD
