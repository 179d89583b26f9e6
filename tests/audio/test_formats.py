import struct

import numpy as np
import pytest

from speakstream.audio import FORMATS, audio_format, open_encoder
from speakstream.audio.decode import decode
from speakstream.audio.encoders import G711
from speakstream.bench.asr import Recognizer, normalize_words
from speakstream.engine.kokoro import KokoroEngine
from speakstream.errors import InvalidInput
from speakstream.types import AudioChunk

RATE = 24_000
PIECE = RATE // 10  # 100 ms
# Samples a decoder may add or hold back: one codec frame, plus the encoder priming that only a
# seekable file's header could announce (MP3 576 + 529, AAC 1024).
SLACK = {"mp3": 576 + 1105, "aac": 1024 + 1024, "adts": 1024 + 1024, "opus": 960, "webm": 960, "flac": 2304}


def tone(seconds: float, hz: float = 440.0, rate: int = RATE) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def encode_in_pieces(name: str, samples: np.ndarray, **kwargs: object) -> list[bytes]:
    encoder = open_encoder(name, **kwargs)  # type: ignore[arg-type]
    outputs = [encoder.encode(samples[i : i + PIECE]) for i in range(0, len(samples), PIECE)]
    return [*outputs, encoder.close()]


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_round_trip_duration(name: str) -> None:
    samples = tone(2.0)
    data = b"".join(encode_in_pieces(name, samples))
    decoded, rate = decode(data, name)
    expected = 2.0
    slack = SLACK.get(name, 0) / 24_000 + 1 / rate + (0.005 if name in ("mulaw", "alaw") else 0)
    assert abs(len(decoded) / rate - expected) <= slack, (len(decoded) / rate, slack)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_prefix_plays(name: str) -> None:
    """A player given the first N outputs decodes (about) N outputs' worth of audio."""
    samples = tone(2.0)
    outputs = encode_in_pieces(name, samples)
    fmt = audio_format(name)
    lag = 0.06 + SLACK.get(name, 0) / RATE + (0.1 if fmt.container in ("webm", "mp4") else 0)
    lag += 0.05 if fmt.default_rate not in (None, RATE) else 0  # the resampler's filter delay
    for n in (3, 8, 15):
        decoded, rate = decode(b"".join(outputs[:n]), name)
        fed = n * 0.1
        assert fed - lag <= len(decoded) / rate <= fed + lag, (name, n, len(decoded) / rate)


@pytest.mark.parametrize("name", [n for n in sorted(FORMATS) if not FORMATS[n].raw])
def test_bytes_leave_as_soon_as_audio_is_encoded(name: str) -> None:
    outputs = encode_in_pieces(name, tone(1.0))
    first = next(i for i, out in enumerate(outputs) if out)
    assert first <= 1  # within the first 200 ms of audio fed
    assert sum(1 for out in outputs[:-1] if out) >= 5  # and keep coming while audio is fed


@pytest.mark.parametrize("rate", [8_000, 16_000, 22_050, 44_100, 48_000])
def test_resampling_keeps_duration_and_pitch(rate: int) -> None:
    data = b"".join(encode_in_pieces("wav", tone(1.0, hz=440.0), output_rate_hz=rate))
    decoded, got_rate = decode(data, "wav")
    assert got_rate == rate
    assert abs(len(decoded) - rate) <= rate * 0.002
    spectrum = np.abs(np.fft.rfft(decoded[rate // 10 :]))
    peak = np.argmax(spectrum) * rate / (2 * (len(spectrum) - 1))
    assert abs(peak - 440.0) < 3.0


def test_wav_header_streams_with_open_length() -> None:
    header = encode_in_pieces("wav", tone(0.1))[0][:44]
    assert header[:4] == b"RIFF" and header[8:16] == b"WAVEfmt "
    assert struct.unpack("<I", header[4:8])[0] == 0xFFFFFFFF
    assert struct.unpack("<I", header[40:44])[0] == 0xFFFFFFFF
    assert struct.unpack("<HHI", header[20:28]) == (1, 1, 24_000)


G711_REFERENCE = {
    "mulaw": {0: 0xFF, 1000: 0xCE, -1000: 0x4E, 8000: 0xA0, 32767: 0x80, -32768: 0x00},
    "alaw": {0: 0xD5, 1000: 0xFA, -1000: 0x7A, 8000: 0x8A, 32767: 0xAA, -32768: 0x2A},
}
"""16-bit samples and their codes from the G.711 reference coder (CPython's ``audioop``, Sun's
g711.c); the encoders matched it on all of 90,001 samples when written."""


@pytest.mark.parametrize("law", sorted(G711))
def test_g711_is_8khz_and_the_reference_coders_bytes(law: str) -> None:
    encode, decode_law = G711[law]
    data = b"".join(encode_in_pieces(law, tone(1.0)))
    assert abs(len(data) - 8000) < 80  # one byte a sample at 8 kHz
    samples = np.array(list(G711_REFERENCE[law]), np.float64) / 32767
    assert list(encode(samples.astype(np.float32))) == list(G711_REFERENCE[law].values())
    codes = bytes(range(256))
    assert encode(decode_law(codes)) == bytes(0xFF if c == 0x7F and law == "mulaw" else c for c in codes)
    x = np.linspace(-1, 1, 1001, dtype=np.float32)
    err = np.abs(decode_law(encode(x)) - x)
    assert err.max() < 0.04 and err[np.abs(x) < 0.05].max() < 0.002  # fine steps near zero


@pytest.mark.parametrize(
    ("name", "rate", "code"),
    [
        ("ogg", None, "invalid_format"),
        ("opus", 22_050, "invalid_sample_rate"),
        ("pcm", 11_025, "invalid_sample_rate"),
    ],
)
def test_bad_requests(name: str, rate: int | None, code: str) -> None:
    with pytest.raises(InvalidInput) as info:
        open_encoder(name, output_rate_hz=rate)
    assert info.value.code == code


@pytest.fixture(scope="module")
def sentence(kokoro: KokoroEngine) -> AudioChunk:
    return kokoro.synthesize("Please bring your insurance card and arrive ten minutes early.", voice="af_heart")


@pytest.mark.model
@pytest.mark.asr
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_real_speech_survives_every_format(name: str, sentence: AudioChunk, asr: Recognizer) -> None:
    data = b"".join(encode_in_pieces(name, sentence.samples))
    decoded, rate = decode(data, name)
    slack = SLACK.get(name, 0) / RATE + 0.01
    assert abs(len(decoded) / rate - sentence.duration_s) <= slack
    reference = normalize_words(asr.transcribe(sentence.samples, RATE).text)
    assert normalize_words(asr.transcribe(decoded, rate).text) == reference
