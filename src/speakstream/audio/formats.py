"""The audio formats speakstream streams, and ``open_encoder`` to get one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from speakstream.audio.encoders import AVEncoder, AVSettings, RawEncoder
from speakstream.audio.resample import SUPPORTED_RATES
from speakstream.errors import InvalidInput
from speakstream.types import SAMPLE_RATE


class Encoder(Protocol):
    def encode(self, samples: NDArray[np.float32]) -> bytes:
        """Encode float32 mono samples; returns whatever bytes are ready now (maybe none)."""
        ...

    def close(self) -> bytes:
        """Flush the codec and muxer; returns the tail. Call once, at the end."""
        ...


@dataclass(frozen=True, slots=True)
class AudioFormat:
    """One streamable format: how it is labelled and made."""

    name: str
    mime_type: str
    extension: str
    default_rate: int | None = None
    """The output rate when none is asked for (None: the engine's 24 kHz)."""
    container: str | None = None
    codec: str | None = None
    default_bitrate: int | None = None
    options: tuple[tuple[str, str], ...] = ()

    @property
    def raw(self) -> bool:
        return self.container is None


FORMATS: dict[str, AudioFormat] = {
    f.name: f
    for f in (
        AudioFormat("pcm", "audio/pcm", "pcm"),
        AudioFormat("f32", "audio/pcm;encoding=float;bits=32", "f32"),
        AudioFormat("wav", "audio/wav", "wav"),
        AudioFormat("mulaw", "audio/basic", "ulaw", default_rate=8_000),
        AudioFormat("alaw", "audio/PCMA", "alaw", default_rate=8_000),
        AudioFormat("mp3", "audio/mpeg", "mp3", container="mp3", codec="libmp3lame", default_bitrate=48_000),
        AudioFormat(
            "opus",
            "audio/ogg; codecs=opus",
            "ogg",
            container="ogg",
            codec="libopus",
            default_bitrate=32_000,
            options=(("page_duration", "20000"),),
        ),
        AudioFormat(
            "webm",
            "audio/webm; codecs=opus",
            "webm",
            container="webm",
            codec="libopus",
            default_bitrate=32_000,
            options=(("cluster_time_limit", "100"), ("cluster_size_limit", "4096")),
        ),
        AudioFormat(
            "aac",
            "audio/mp4; codecs=mp4a.40.2",
            "m4a",
            container="mp4",
            codec="aac",
            default_bitrate=32_000,
            options=(("movflags", "frag_keyframe+empty_moov+default_base_moof"), ("frag_duration", "100000")),
        ),
        AudioFormat("adts", "audio/aac", "aac", container="adts", codec="aac", default_bitrate=32_000),
        AudioFormat("flac", "audio/flac", "flac", container="flac", codec="flac"),
    )
}
OPUS_RATES = (8_000, 12_000, 16_000, 24_000, 48_000)


def audio_format(name: str) -> AudioFormat:
    try:
        return FORMATS[name]
    except (KeyError, TypeError):
        raise InvalidInput(
            f"unknown format {str(name)[:20]!r}; choose one of {', '.join(FORMATS)}", code="invalid_format"
        ) from None


def output_rate(fmt: AudioFormat, requested: int | None, in_rate: int = SAMPLE_RATE) -> int:
    rate = requested or fmt.default_rate or in_rate
    allowed = OPUS_RATES if fmt.codec == "libopus" else SUPPORTED_RATES
    if rate not in allowed:
        raise InvalidInput(f"{fmt.name} cannot stream at {rate} Hz; use one of {allowed}", code="invalid_sample_rate")
    return rate


def open_encoder(
    name: str, *, sample_rate: int = SAMPLE_RATE, output_rate_hz: int | None = None, bitrate: int | None = None
) -> Encoder:
    """A fresh streaming encoder for ``name`` fed with mono float32 at ``sample_rate``."""
    fmt = audio_format(name)
    out_rate = output_rate(fmt, output_rate_hz, sample_rate)
    if fmt.raw:
        return RawEncoder(kind=fmt.name, in_rate=sample_rate, out_rate=out_rate)
    assert fmt.container is not None and fmt.codec is not None
    settings = AVSettings(fmt.container, fmt.codec, bitrate or fmt.default_bitrate, dict(fmt.options))
    return AVEncoder(settings, in_rate=sample_rate, out_rate=out_rate)
