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
    or G.711 mu-law bytes."""

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
            data = mulaw_encode(samples) if self.kind == "mulaw" else float_to_pcm16(samples)
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


def mulaw_encode(samples: NDArray[np.float32]) -> bytes:
    """G.711 mu-law (the formula of ITU-T G.711, 8-bit, bit-inverted)."""
    x = np.clip(samples.astype(np.float64), -1.0, 1.0)
    magnitude = np.log1p(255.0 * np.abs(x)) / np.log1p(255.0)
    code = np.round(magnitude * 127.0).astype(np.int16)
    sign = np.where(x < 0, 0x00, 0x80)
    return bytes(((sign | code) ^ 0x7F).astype(np.uint8).tobytes())


def mulaw_decode(data: bytes) -> NDArray[np.float32]:
    raw = np.frombuffer(data, dtype=np.uint8) ^ 0x7F
    magnitude = (raw & 0x7F).astype(np.float64) / 127.0
    x = (np.power(256.0, magnitude) - 1.0) / 255.0
    return np.where(raw & 0x80, x, -x).astype(np.float32)


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
