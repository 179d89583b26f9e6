"""Long form: a book chapter (about 14 minutes spoken) through the OpenAI route in one request:
Whisper's word error rate, audio seconds per wall second, and the server's memory over time."""

from __future__ import annotations

import asyncio
import difflib
import threading
import time
from typing import Any

import httpx
import numpy as np

from speakstream.bench.asr import normalize_words, recognizer, wer
from speakstream.bench.context import BenchContext
from speakstream.data import long_form_text
from speakstream.types import SAMPLE_RATE, pcm16_to_float

WORDS_PER_MINUTE = 160
"""Kokoro's af_heart at speed 1 reads prose at about this rate: a quick run's text is cut to its minutes."""


async def long_form(ctx: BenchContext, *, minutes: float | None = None) -> dict[str, Any]:
    """The chapter (or its first ``minutes``) spoken once; memory is sampled only where the
    server runs in this process (``ctx.runtime``)."""
    text = long_form_text()
    if minutes is not None:
        text = _first_words(text, int(minutes * WORDS_PER_MINUTE))
    sampler = _Rss() if ctx.runtime is not None else None
    started = time.perf_counter()
    try:
        audio = await _speak(ctx.http_url, text)
    finally:
        wall = time.perf_counter() - started
        if sampler is not None:
            sampler.stop()
    samples = pcm16_to_float(audio)
    heard = await asyncio.to_thread(recognizer().transcribe, samples, SAMPLE_RATE)
    row: dict[str, Any] = {
        "words": len(text.split()),
        "audio_s": round(len(samples) / SAMPLE_RATE, 1),
        "wall_s": round(wall, 1),
        "audio_per_wall_s": round(len(samples) / SAMPLE_RATE / wall, 2),
        "wer": round(wer(text, heard.text), 4),
        "misheard": misheard(text, heard.text),
    }
    if sampler is not None:
        row |= sampler.summary()
    return row


def misheard(reference: str, hypothesis: str, limit: int = 30) -> list[str]:
    """The first ``limit`` places where Whisper's words differ from the text's, as ``said -> heard``."""
    ref, hyp = normalize_words(reference), normalize_words(hypothesis)
    matcher = difflib.SequenceMatcher(a=ref, b=hyp, autojunk=False)
    changed = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    return [f"{' '.join(ref[a:b]) or '-'} -> {' '.join(hyp[c:d]) or '-'}" for _, a, b, c, d in changed[:limit]]


def _first_words(text: str, count: int) -> str:
    words = text.split()
    cut = " ".join(words[:count])
    end = max(cut.rfind(". "), cut.rfind("? "), cut.rfind("! "))
    return cut[: end + 1] if end > 0 else cut


async def _speak(url: str, text: str) -> bytes:
    body = {"model": "kokoro", "input": text, "voice": "af_heart", "response_format": "pcm"}
    audio = bytearray()
    async with (
        httpx.AsyncClient(timeout=None) as client,
        client.stream("POST", f"{url}/v1/audio/speech", json=body) as response,
    ):
        response.raise_for_status()
        async for data in response.aiter_bytes():
            audio += data
    return bytes(audio)


class _Rss:
    """This process's resident memory, sampled every half second on a thread until ``stop``."""

    def __init__(self) -> None:
        import psutil

        self._process = psutil.Process()
        self._samples: list[tuple[float, int]] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.is_set():
            self._samples.append((time.perf_counter(), self._process.memory_info().rss))
            self._done.wait(0.5)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()

    def summary(self) -> dict[str, Any]:
        """Peak resident memory, and its growth from a quarter of the way to the end (the first
        quarter holds the warm-up of arenas and caches), in MB."""
        rss = np.array([r for _, r in self._samples], dtype=np.float64) / 2**20
        if len(rss) < 4:
            return {}
        quarter = len(rss) // 4
        return {
            "rss_peak_mb": round(float(rss.max())),
            "rss_growth_mb": round(float(rss[-1] - rss[quarter]), 1),
            "rss_mb": [round(float(v)) for v in rss[:: max(1, len(rss) // 40)]],
        }
