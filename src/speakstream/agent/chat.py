"""``speakstream agent chat``: type prompts, hear replies as they are written.

Audio plays through a sound device when ``sounddevice`` and a device are present; otherwise each
reply is written to a WAV file and the path is printed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rich.console import Console

from speakstream.agent.demo import ModeRun, write_wav
from speakstream.agent.events import AgentDone, AgentError, AudioChunkEvent, TextDelta
from speakstream.agent.sources import TextSource
from speakstream.agent.voice_agent import VoiceAgent
from speakstream.client import SpeechSession


def _player() -> Any:
    """A raw output stream on the default device, or None when there is none."""
    try:
        import sounddevice

        stream = sounddevice.RawOutputStream(samplerate=24_000, channels=1, dtype="int16")
        stream.start()
        return stream
    except Exception:  # no library, no PortAudio or no device: all mean "write files instead"
        return None


async def chat_loop(
    make_source: Callable[[], TextSource],
    url: str,
    *,
    api_key: str | None,
    voice: str | None,
    out_dir: Path,
    console: Console,
    prompts: Iterator[str],
) -> None:
    player = _player()
    console.print("speaking through the sound device" if player else f"no sound device: replies go to {out_dir}/")
    async with SpeechSession(url, api_key=api_key) as session:
        for turn, prompt in enumerate(prompts, 1):
            agent = VoiceAgent(make_source(), session, voice=voice)
            audio = bytearray()
            async for event in agent.run(prompt):
                if isinstance(event, TextDelta):
                    console.print(event.text, end="")
                elif isinstance(event, AudioChunkEvent):
                    audio += event.audio
                    if player is not None:
                        player.write(event.audio)
                elif isinstance(event, AgentDone):
                    console.print(f"\n[dim](first audio {1000 * (event.timings['ttfa_s'] or 0):.0f} ms)[/]")
                elif isinstance(event, AgentError):
                    console.print(f"\n[red]error: {event.message}[/]")
            if player is None and audio:
                path = out_dir / f"reply-{turn}.wav"
                write_wav(ModeRun(None, {}, bytes(audio)), path)
                console.print(f"[dim]wrote {path}[/]")
