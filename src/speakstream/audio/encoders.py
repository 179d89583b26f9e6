"""Encoders that stream: each ``encode`` returns the bytes that are ready now, ``close`` the tail.

Raw formats (PCM, WAV with an open length, G.711 mu-law) are written directly; compressed ones go
through PyAV (FFmpeg: libmp3lame, libopus, aac, flac) into a write-only sink, so muxers cannot seek
back to rewrite headers and hand out bytes as soon as they are written.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from speakstream.audio.resample import StreamResampler
from speakstream.types import float_to_pcm16


class RawEncoder:
    """PCM s16le, optionally behind a streaming WAV header, float32 little-endian PCM (``f32``),
    or G.711 mu-law or A-law bytes."""

    def __init__(self, *, kind: str, in_rate: int, out_rate: int) -> None:
        self.kind = kind
        self._resampler = StreamResampler(in_rate, out_rate)
        self._header = wav_header(out_rate) if kind == "wav" else b""
        self._closed = False

    def encode(self, samples: NDArray[np.float32]) -> bytes:
        return self._take(self._resampler.process(samples))

    def close(self) -> bytes:
        if self._closed:
            return b""
        self._closed = True
        return self._take(self._resampler.flush())

    def _take(self, samples: NDArray[np.float32]) -> bytes:
        if self.kind == "f32":
            data = np.clip(samples, -1.0, 1.0).astype("<f4").tobytes()
        else:
            data = G711[self.kind][0](samples) if self.kind in G711 else float_to_pcm16(samples)
        header, self._header = self._header, b""
        return header + data


def wav_header(sample_rate: int, channels: int = 1, bits: int = 16, data_bytes: int | None = None) -> bytes:
    """A RIFF/WAVE header; without ``data_bytes`` its lengths say "unknown" (0xFFFFFFFF), as
    streaming players expect."""
    block = channels * bits // 8
    fmt = struct.pack("<HHIIHH", 1, channels, sample_rate, sample_rate * block, block, bits)
    data = 0xFFFFFFFF if data_bytes is None else data_bytes
    riff = 0xFFFFFFFF if data_bytes is None else data_bytes + 36
    return (
        b"RIFF"
        + struct.pack("<I", riff)
        + b"WAVEfmt "
        + struct.pack("<I", 16)
        + fmt
        + b"data"
        + struct.pack("<I", data)
    )


_MU_ENDS = np.array([0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF])
_A_ENDS = np.array([0x1F, 0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF])
_MU_BIAS = 0x84


def _pcm16(samples: NDArray[np.float32]) -> NDArray[np.int64]:
    return np.clip(np.round(samples.astype(np.float64) * 32767.0), -32768, 32767).astype(np.int64)


def mulaw_encode(samples: NDArray[np.float32]) -> bytes:
    """G.711 mu-law, segment by segment as the standard's reference coder makes it (bit-exact with
    it), so every telephone system's decoder hears what was meant."""
    pcm = _pcm16(samples) >> 2
    mask = np.where(pcm < 0, 0x7F, 0xFF)
    magnitude = np.minimum(np.abs(pcm), 8159) + (_MU_BIAS >> 2)
    segment = np.searchsorted(_MU_ENDS, magnitude)
    code = (np.minimum(segment, 7) << 4) | ((magnitude >> (np.minimum(segment, 7) + 1)) & 0x0F)
    return bytes((np.where(segment >= 8, 0x7F, code) ^ mask).astype(np.uint8).tobytes())


def mulaw_decode(data: bytes) -> NDArray[np.float32]:
    u = ~np.frombuffer(data, dtype=np.uint8).astype(np.int64) & 0xFF
    t = (((u & 0x0F) << 3) + _MU_BIAS) << ((u & 0x70) >> 4)
    return (np.where(u & 0x80, _MU_BIAS - t, t - _MU_BIAS) / 32768.0).astype(np.float32)


def alaw_encode(samples: NDArray[np.float32]) -> bytes:
    """G.711 A-law, segment by segment as the standard's reference coder makes it (bit-exact with
    it): the European telephone networks' law, as mu-law is North America's and Japan's."""
    pcm = _pcm16(samples) >> 3
    mask = np.where(pcm >= 0, 0xD5, 0x55)
    magnitude = np.where(pcm >= 0, pcm, -pcm - 1)
    segment = np.searchsorted(_A_ENDS, magnitude)
    step = np.where(segment < 2, 1, np.minimum(segment, 7))
    code = (np.minimum(segment, 7) << 4) | ((magnitude >> step) & 0x0F)
    return bytes((np.where(segment >= 8, 0x7F, code) ^ mask).astype(np.uint8).tobytes())


def alaw_decode(data: bytes) -> NDArray[np.float32]:
    a = np.frombuffer(data, dtype=np.uint8).astype(np.int64) ^ 0x55
    segment = (a & 0x70) >> 4
    t = ((a & 0x0F) << 4) + np.where(segment == 0, 8, 0x108)
    t = np.where(segment > 1, t << np.maximum(segment - 1, 0), t)
    return (np.where(a & 0x80, t, -t) / 32768.0).astype(np.float32)


G711 = {"mulaw": (mulaw_encode, mulaw_decode), "alaw": (alaw_encode, alaw_decode)}
"""The G.711 laws by format name: (encode, decode)."""


class _Sink:
    """A write-only file: muxers cannot seek back, so they never hold bytes for a rewrite."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def write(self, data: Any) -> int:
        self._buf += data
        return len(data)

    def take(self) -> bytes:
        data = bytes(self._buf)
        self._buf.clear()
        return data


@dataclass(frozen=True, slots=True)
class AVSettings:
    container: str
    codec: str
    bitrate: int | None
    options: dict[str, str] = field(default_factory=dict)


class AVEncoder:
    """A PyAV (FFmpeg) codec and muxer writing into a sink. PyAV is imported by the first encoder
    made, not at start-up (about 80 ms a server's start would otherwise wait on)."""

    def __init__(self, settings: AVSettings, *, in_rate: int, out_rate: int) -> None:
        import av

        self._av = av
        self._resampler = StreamResampler(in_rate, out_rate)
        self._sink = _Sink()
        self._container = av.open(self._sink, mode="w", format=settings.container, options=settings.options)
        self._stream = cast(Any, self._container.add_stream(settings.codec, rate=out_rate))
        self._stream.layout = "mono"
        if settings.bitrate:
            self._stream.bit_rate = settings.bitrate
        self._rate = out_rate
        self._pts = 0
        self._closed = False

    def encode(self, samples: NDArray[np.float32]) -> bytes:
        self._write(self._resampler.process(samples))
        return self._sink.take()

    def close(self) -> bytes:
        if not self._closed:
            self._closed = True
            self._write(self._resampler.flush())
            for packet in self._stream.encode(None):
                self._container.mux(packet)
            self._container.close()
        return self._sink.take()

    def _write(self, samples: NDArray[np.float32]) -> None:
        if not len(samples):
            return
        planar = samples.astype(np.float32).reshape(1, -1)
        frame = self._av.AudioFrame.from_ndarray(planar, format="fltp", layout="mono")
        frame.sample_rate = self._rate
        frame.pts = self._pts
        self._pts += len(samples)
        for packet in self._stream.encode(frame):
            self._container.mux(packet)
