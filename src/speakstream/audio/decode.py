"""Decode what an encoder produced (whole or a prefix), for clients, tests and benchmarks."""

from __future__ import annotations

import io
from typing import Any

import av
import numpy as np
from numpy.typing import NDArray

from speakstream.audio.encoders import G711
from speakstream.audio.formats import audio_format
from speakstream.types import pcm16_to_float


def decode(data: bytes, name: str, *, sample_rate: int | None = None) -> tuple[NDArray[np.float32], int]:
    """Mono float32 samples and their rate. A truncated stream decodes as far as it goes."""
    fmt = audio_format(name)
    if fmt.name == "pcm":
        return pcm16_to_float(data), sample_rate or 24_000
    if fmt.name == "f32":
        usable = len(data) - len(data) % 4
        return np.frombuffer(data[:usable], "<f4").astype(np.float32), sample_rate or 24_000
    if fmt.name in G711:
        return G711[fmt.name][1](data), sample_rate or 8_000
    if fmt.name == "wav":
        rate = int.from_bytes(data[24:28], "little") if len(data) >= 44 else (sample_rate or 24_000)
        return pcm16_to_float(data[44:]), rate
    return _decode_av(data, fmt.container or fmt.name)


def _decode_av(data: bytes, container: str) -> tuple[NDArray[np.float32], int]:
    pieces: list[NDArray[np.float32]] = []
    rate = 0
    try:
        with av.open(io.BytesIO(data), mode="r", format=container) as source:
            stream = source.streams.audio[0]
            rate = stream.codec_context.sample_rate or stream.rate or 0
            for packet in source.demux(stream):
                pieces.extend(_frames(packet))
    except (av.error.InvalidDataError, av.error.EOFError, IndexError):
        pass  # a prefix may end mid-packet or before the first one: keep what decoded
    samples = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
    return samples, rate


def _frames(packet: Any) -> list[NDArray[np.float32]]:
    try:
        frames = packet.decode()
    except av.error.InvalidDataError:
        return []
    out = []
    for frame in frames:
        array = frame.to_ndarray().astype(np.float32)
        if frame.format.name.startswith("s16"):
            array /= 32768.0
        elif frame.format.name.startswith("s32"):
            array /= 2147483648.0
        out.append(array.reshape(-1) if array.shape[0] == 1 else array.mean(axis=0))
    return out
