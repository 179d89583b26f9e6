"""Client stage: the WebSocket session, SSE and plain HTTP helpers, with reconnection."""

from speakstream.channel import Channel, SpeechResult
from speakstream.client.http import StreamedAudio, fetch_audio, stream_audio, stream_events
from speakstream.client.retry import Backoff, Reconnect
from speakstream.client.session import SpeechSession
from speakstream.protocol import AudioEvent, ControlEvent

__all__ = [
    "AudioEvent",
    "Backoff",
    "Channel",
    "ControlEvent",
    "Reconnect",
    "SpeechResult",
    "SpeechSession",
    "StreamedAudio",
    "fetch_audio",
    "stream_audio",
    "stream_events",
]
