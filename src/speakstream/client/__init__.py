"""Client stage: the WebSocket session, SSE and plain HTTP helpers."""

from speakstream.channel import Channel, SpeechResult
from speakstream.client.http import StreamedAudio, fetch_audio, stream_audio, stream_events
from speakstream.client.session import SpeechSession
from speakstream.protocol import AudioEvent, ControlEvent

__all__ = [
    "AudioEvent",
    "Channel",
    "ControlEvent",
    "SpeechResult",
    "SpeechSession",
    "StreamedAudio",
    "fetch_audio",
    "stream_audio",
    "stream_events",
]
