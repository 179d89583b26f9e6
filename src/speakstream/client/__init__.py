"""Client stage: the WebSocket session, SSE and plain HTTP helpers."""

from speakstream.client.http import StreamedAudio, fetch_audio, stream_audio, stream_events
from speakstream.client.session import AudioEvent, ControlEvent, SpeechResult, SpeechSession

__all__ = [
    "AudioEvent",
    "ControlEvent",
    "SpeechResult",
    "SpeechSession",
    "StreamedAudio",
    "fetch_audio",
    "stream_audio",
    "stream_events",
]
