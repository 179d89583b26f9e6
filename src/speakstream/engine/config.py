"""How the Kokoro engine loads and runs its model: one frozen config, and what each setting resolves
to on the providers this onnxruntime has."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from speakstream.engine.cpus import available_cpus
from speakstream.engine.windows.edges import EdgePolicy
from speakstream.engine.windows.policy import WindowPolicy
from speakstream.errors import EngineError


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineConfig:
    """How the engine loads and runs the model."""

    model_dir: Path | None = None
    """Model directory; default ``SPEAKSTREAM_MODEL_DIR`` or the cache."""
    graph: str = "fast"
    """``fast`` (float convolutions, durations, decoded in windows), ``timed`` (int8, durations,
    decoded whole) or ``original``."""
    decoder: str = "auto"
    """The ``fast`` graph's decoder: ``mixed`` (the generator's first stage and noise branch in
    int8, faster on a CPU; see ``model.quantize``), ``float``, or ``auto``: ``mixed`` on the CPU
    provider, ``float`` on any other (a GPU's provider may lack ``QLinearConv``)."""
    crowded_decoder: str = "auto"
    """The decoder for a reply's opening while more replies wait for their first audio than the
    engine has lanes: ``int8`` (every convolution of the generator in int8: faster, a little further
    from the float decoder), ``same`` (``decoder``), or ``auto``: ``int8`` beside ``mixed``, else
    ``same``. ``int8`` loads the decoder once more for each copy of ``decoder``."""
    intra_op_threads: int = 0
    """Threads inside one inference (0: the CPUs this process may use, its affinity and its
    container's CPU quota; ONNX Runtime's own default counts the machine's cores)."""
    inter_op_threads: int = 1
    lanes: int = 0
    """Inferences that may run at once, the engine's lanes (0: 2 on a CPU with 2 cores or more,
    else 1). Above 1 on a CPU, each part of the model is also loaded as that many narrow copies
    (an equal share of the cores each) for inferences that start beside another."""
    batch: int = 0
    """The most windows of different sessions decoded in one run (0 or 1: one a run). Above 1 the
    decoder is the float ``batched`` one (made on demand), windows grow to a few lengths so that
    they share one, and the engine has this many lanes unless ``lanes`` says otherwise; the
    weights are not shared. Off by default: on a CPU it buys nothing (``docs/design.md``); a GPU
    is what it is for."""
    share_weights: bool = True
    """On a CPU, every session reads one set of weights from one memory map, optimised once for
    this machine, and one activation arena that shrinks after each run (``model.weights``): a
    default server in about half the memory, at a few per cent of speed (no prepacked weights).
    False: each session its own weights and arena, as ONNX Runtime makes them."""
    weights_cache: Path | None = None
    """Where the shared weights are made when the assets hold none for this CPU and their folder
    cannot be written (a server's data directory); the system's temporary directory after it."""
    spin_threads: bool = False
    """Let ONNX Runtime's threads spin between kernels: a little faster on an idle machine, much
    slower when the cores are shared (an LLM on the same CPU), so off by default."""
    providers: tuple[str, ...] | None = None
    """Execution providers; None picks CUDA when this onnxruntime has it, else CPU."""
    edges: EdgePolicy = field(default_factory=EdgePolicy)
    windows: WindowPolicy = field(default_factory=WindowPolicy)
    """How the ``fast`` graph's decoder is run in windows (streaming inside a chunk)."""
    languages: tuple[str, ...] = ()
    """Languages whose G2P loads as the engine warms (the others load on first use)."""
    warm_runs: int | None = None
    """Runs of every copy of every part before serving (narrow copies and the crowded decoder
    included), beside the G2P's loading; 0: the wide copies only, through a synthesis (two when
    the weights are not shared: a session's first run then allocates). None: 0 where the weights
    are shared (a copy's first run takes what its later ones take), else 1."""


def weights_caches(config: EngineConfig) -> list[Path]:
    """Where the shared weights may be made besides the assets' folder, in order."""
    scratch = Path(tempfile.gettempdir()) / "speakstream" / "optimized"
    return [config.weights_cache, scratch] if config.weights_cache else [scratch]


def pick_providers(requested: tuple[str, ...] | None = None) -> list[str]:
    import onnxruntime as ort

    available = ort.get_available_providers()
    wanted = requested or tuple(p for p in os.environ.get("SPEAKSTREAM_PROVIDERS", "").split(",") if p)
    if wanted:
        missing = [p for p in wanted if p not in available]
        if missing:
            raise EngineError(f"execution providers {missing} not in this onnxruntime ({available})", retryable=False)
        return list(wanted)
    if "CUDAExecutionProvider" in available:
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


def pick_decoder(requested: str, providers: list[str]) -> str:
    """``EngineConfig.decoder`` for these providers: ``auto`` is ``mixed`` on the CPU only."""
    if requested != "auto":
        return requested
    return "mixed" if providers[0] == "CPUExecutionProvider" else "float"


def pick_crowded_decoder(requested: str, decoder: str) -> str | None:
    """``EngineConfig.crowded_decoder`` beside ``decoder`` (resolved): None for the same one."""
    if requested == "auto":
        return "int8" if decoder == "mixed" else None
    return None if requested in ("same", decoder) else requested


def engine_lanes(config: EngineConfig, providers: list[str]) -> int:
    """Inferences that may run at once: ``config.lanes``, or what 0 chooses: two on a CPU with 2
    cores or more (two narrow inferences do more than one wide one; one alone still gets every
    core), else one (a GPU, or a whole graph, which has no narrow copies)."""
    if config.lanes:
        return config.lanes
    if config.batch > 1:
        return config.batch
    on_cpu = providers[0] == "CPUExecutionProvider" and config.graph == "fast"
    return 2 if on_cpu and cores(config) >= 2 else 1


def cores(config: EngineConfig) -> int:
    """The cores one inference may use: ``intra_op_threads``, else the CPUs this process may use
    (its affinity and its container's quota, ``cpus.available_cpus``)."""
    return config.intra_op_threads or available_cpus()


def session_options(intra_op_threads: int, inter_op_threads: int, spin: bool) -> Any:
    """ONNX Runtime options for one of the engine's sessions (0 threads: ONNX Runtime's default)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = intra_op_threads
    options.inter_op_num_threads = inter_op_threads
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    return options
