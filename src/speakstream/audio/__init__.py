"""Encoder stage: streaming audio formats (PCM, WAV, mu-law, MP3, Opus, WebM, AAC, FLAC)."""

from speakstream.audio.formats import FORMATS, AudioFormat, Encoder, audio_format, open_encoder, output_rate

__all__ = ["FORMATS", "AudioFormat", "Encoder", "audio_format", "open_encoder", "output_rate"]
