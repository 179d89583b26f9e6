"""What every experiment gets: the server to talk to, a local engine, the mode, a progress line."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import platform
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from speakstream.engine.kokoro import KokoroEngine
from speakstream.text import split_sentences


@dataclass(slots=True)
class BenchContext:
    out: Path
    quick: bool
    ws_url: str
    http_url: str
    engine_source: Callable[[], KokoroEngine]
    """The engine the in-process server uses, or a fresh local one for ``--server``."""
    runtime: Any = None
    """The in-process server's runtime (None with ``--server``): experiments run arms on it."""
    say: Callable[[str], None] = print
    device: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def in_process(cls, server: Any) -> BenchContext:
        """A full run's context for an in-process ``ThreadedServer``: its URLs, engine and runtime."""
        runtime = server.runtime
        return cls(
            out=Path("."),
            quick=False,
            ws_url=server.ws_url,
            http_url=server.url,
            engine_source=EngineHolder(runtime.engine),
            runtime=runtime,
        )

    @contextlib.asynccontextmanager
    async def configured(self, engine: KokoroEngine | None = None, **changes: object) -> AsyncIterator[None]:
        """An experiment's arm: the in-process server as if started with its config built by
        ``dataclasses.replace(config, **changes)`` over ``engine`` (``Runtime.configured``, entered
        on the server's loop); a remote server (``--server``) as it is."""
        if self.runtime is None:
            yield
            return
        loop = self.runtime.loop
        arm = self.runtime.configured(dataclasses.replace(self.runtime.config, **changes), engine)
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(arm.__aenter__(), loop))
        try:
            yield
        finally:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(arm.__aexit__(None, None, None), loop))

    def trials(self, full: int, quick: int = 1) -> int:
        return quick if self.quick else full

    def sized(self, text: str, quick_sentences: int = 1) -> str:
        """``text``, or in a quick run its first sentences only: a quick run checks that an
        experiment works end to end, and a reply's later sentences only add seconds of synthesis."""
        if not self.quick:
            return text
        return " ".join(span.text for span in split_sentences(text)[:quick_sentences])


class EngineHolder:
    """Loads the local engine once, on first use."""

    def __init__(self, engine: KokoroEngine | None = None) -> None:
        self._engine = engine

    def __call__(self) -> KokoroEngine:
        if self._engine is None:
            self._engine = KokoroEngine()
        return self._engine


def widest_vector(flags: list[str]) -> str | None:
    """The widest vector extension in /proc/cpuinfo's flags: ONNX Runtime picks its CPU kernels by
    it, so a report names it beside the CPU."""
    for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"), ("sse4_1", "SSE4.1")):
        if flag in flags:
            return name
    return None


def device_info(engine: KokoroEngine | None = None) -> dict[str, Any]:
    import onnxruntime

    cpu, flags = platform.processor() or platform.machine(), ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            lines = f.readlines()
        cpu = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), cpu)
        flags = next((line.split(":", 1)[1] for line in lines if line.startswith("flags")), "")
    except OSError:
        pass
    info: dict[str, Any] = {
        "cpu": cpu,
        "vector": widest_vector(flags.split()),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "onnxruntime": onnxruntime.__version__,
        "available_providers": onnxruntime.get_available_providers(),
    }
    if engine is not None:
        info["providers"] = engine.providers
        info["device"] = engine.device
        info["graph"] = engine.config.graph
        if engine.decoder:
            info["decoder"] = engine.decoder
        info["lanes"] = engine.lanes
    return info
