"""Saved voices, the vendors' voice APIs, dialogue and phonemes on the real model, heard by
Whisper: the figures issue 63 asked for, printed as one report.

    python scripts/voices_heard.py            # everything (about 4 minutes on 2 cores)
    python scripts/voices_heard.py --no-phonemes

Runs a real server on a fresh data directory; the official ``elevenlabs`` and ``cartesia`` SDKs
talk to it unchanged. Prints what each SDK listed and read, the word error rate of what each voice
said, the dialogue's segments and the silence measured between its turns, a saved voice before
and after a restart, the store's bounds, and each language's phonemes with the error rate of the
speech made from them.
"""

from __future__ import annotations

import argparse
import base64
import json
import tempfile
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from cartesia import Cartesia
from elevenlabs import ElevenLabs

from speakstream.bench.asr import Recognizer, error_rate, multilingual_recognizer, recognizer, wer
from speakstream.bench.experiments.languages import scored, whisper_code
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.phonemes.languages import all_languages
from speakstream.loadtest.servers import start_server
from speakstream.server.serve import ThreadedServer

RATE = 24_000
SAVED = {"name": "support", "blend": "am_adam:0.7,am_michael:0.3", "speed": 1.1, "description": "help desk"}
AGENT = "Thank you for calling the help desk. How can I help you today?"
CALLER = "My parcel has not arrived and I would like a refund please."


def samples(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768


def silence_between(audio: np.ndarray, end_s: float, start_s: float) -> float:
    """The run of quiet 10 ms frames (under -45 dBFS) that holds the midpoint of two turns."""
    frames = audio[: len(audio) // 240 * 240].reshape(-1, 240)
    quiet = 20 * np.log10(np.sqrt(np.mean(frames**2, axis=1)) + 1e-9) < -45
    first = last = int((end_s + start_s) / 2 * 100)
    while first > 0 and quiet[first - 1]:
        first -= 1
    while last < len(quiet) and quiet[last]:
        last += 1
    return (last - first) / 100


def elevenlabs_voices(url: str, asr: Recognizer) -> None:
    client = ElevenLabs(api_key="unused", base_url=url)
    found = client.voices.search(page_size=100)
    kinds = sorted({v.category for v in found.voices if v.category})
    print(f"elevenlabs voices.search: {found.total_count} voices ({', '.join(map(str, kinds))})")
    print(f"  search='supp': {[v.voice_id for v in client.voices.search(search='supp').voices]}")
    print(f"  voices.get_all: {len(client.voices.get_all().voices)} voices")
    voice = client.voices.get(SAVED["name"])
    print(f"  voices.get({SAVED['name']!r}): labels {voice.labels}, preview {voice.preview_url}")
    pcm = b"".join(client.text_to_speech.stream(voice_id=SAVED["name"], text=CALLER, output_format="pcm_24000"))
    heard = asr.transcribe(samples(pcm), RATE).text
    print(f"  text_to_speech.stream with it: {len(pcm) / 2 / RATE:.2f} s, WER {wer(CALLER, heard):.2f}: {heard!r}")


def cartesia_voices(url: str, asr: Recognizer) -> None:
    client = Cartesia(api_key="unused", base_url=url)
    listed = [v.id for v in client.voices.list(limit=100)]
    owned = [v.id for v in client.voices.list(is_owner=True)]
    voice = client.voices.get(SAVED["name"])
    print(f"cartesia voices.list: {len(listed)} voices, is_owner=True: {owned}")
    print(f"  voices.get: {voice.id} {voice.gender} {voice.language} {voice.description!r}")
    pcm = client.tts.generate(
        model_id="sonic-2",
        transcript=CALLER,
        voice={"mode": "id", "id": SAVED["name"]},
        output_format={"container": "raw", "encoding": "pcm_s16le", "sample_rate": RATE},
    ).read()
    print(f"  tts.generate with it: WER {wer(CALLER, asr.transcribe(samples(pcm), RATE).text):.2f}")


def dialogue(server: ThreadedServer, asr: Recognizer) -> None:
    client = ElevenLabs(api_key="unused", base_url=server.url)
    inputs: Any = [{"text": AGENT, "voice_id": "af_heart"}, {"text": CALLER, "voice_id": SAVED["name"]}]
    pcm, segments, words = bytearray(), [], 0
    for chunk in client.text_to_dialogue.stream_with_timestamps(inputs=inputs, output_format="pcm_24000"):
        pcm += base64.b64decode(chunk.audio_base_64 or "")
        segments += chunk.voice_segments or []
        words += len((chunk.alignment.characters if chunk.alignment else None) or [])
    audio = samples(bytes(pcm))
    print(f"dialogue (elevenlabs text_to_dialogue.stream_with_timestamps, {len(audio) / RATE:.2f} s):")
    turns = []
    for index, text in enumerate((AGENT, CALLER)):
        mine = [s for s in segments if s.dialogue_input_index == index]
        start, end = mine[0].start_time_seconds, mine[-1].end_time_seconds
        turns.append((start, end))
        heard = asr.transcribe(audio[int(start * RATE) : int(end * RATE)], RATE).text
        print(f"  turn {index} {mine[0].voice_id}: {start:.3f}-{end:.3f} s, WER {wer(text, heard):.2f}: {heard!r}")
    whole = wer(f"{AGENT} {CALLER}", asr.transcribe(audio, RATE).text)
    pause = server.runtime.config.turn_pause_s
    gap = silence_between(audio, turns[0][1], turns[1][0])
    print(f"  whole WER {whole:.2f}; segments {turns[1][0] - turns[0][1]:.3f} s apart (turn_pause_s {pause})")
    print(f"  silence heard between the turns: {gap:.2f} s (the pause and each voice's edge silence)")


def ssml_speakers(server: ThreadedServer) -> None:
    """Word timestamps over SSE of an SSML reply with a ``<voice>``: which voice spoke each word."""
    ssml = f'<speak>{AGENT} <voice name="{SAVED["name"]}">{CALLER}</voice></speak>'
    body, headers = {"text": ssml, "voice": "af_heart", "format": "pcm"}, {"accept": "text/event-stream"}
    speaker, said = "", []
    with httpx.stream("POST", f"{server.url}/invocations", json=body, headers=headers, timeout=120) as response:
        for line in response.iter_lines():
            if line.startswith("data:") and '"sequence"' in line:
                event = json.loads(line[5:])
                speaker = event.get("voice", speaker)
                said += [f"{w['word']}@{w['start_s']:.2f}:{speaker}" for w in event["words"]]
    print(f"SSML <voice> over SSE, word timestamps and speaker: {' '.join(said)}")


def store(url: str) -> None:
    voices = f"{url}/v1/saved-voices"
    cases = {
        "unknown voice": httpx.get(f"{voices}/nobody"),
        "voice twice in a blend": httpx.post(voices, json={"name": "x", "blend": "af_heart:1,af_heart:2"}),
        "weights sum to nothing": httpx.post(voices, json={"name": "x", "blend": "af_heart:0,am_adam:0"}),
        "a built-in's name": httpx.post(voices, json={"name": "af_bella", "blend": "af_heart"}),
        "speak with a deleted voice": httpx.post(f"{url}/v1/audio/speech", json={"input": "Hi.", "voice": "gone"}),
        "dialogue of no turns": httpx.post(f"{url}/v1/text-to-dialogue", json={"inputs": []}),
    }
    for name, response in cases.items():
        error = response.json().get("error") or response.json().get("detail")
        print(f"  {name}: {response.status_code} {error}")
    kept = httpx.get(f"{voices}/{SAVED['name']}").json()
    print(f"  after a restart on the same data dir: {kept['name']} = {kept['blend']} speed {kept['speed']}")
    httpx.post(voices, json={"name": "second", "blend": "af_bella"})
    full = httpx.post(voices, json={"name": "third", "blend": "af_sky"})
    print(f"  a third voice past max_saved_voices=2: {full.status_code} {full.json()['error']}")


def phonemes(url: str, engine: KokoroEngine, asr: Recognizer) -> None:
    print("phonemes (POST /v1/phonemize) and speech from them (POST /v1/audio/from-phonemes):")
    for language in all_languages():
        text, reference = scored(language.tag)[0]
        voice = next(v.name for v in engine.voices() if v.language == language.tag)
        made = httpx.post(f"{url}/v1/phonemize", json={"text": text, "language": language.tag}, timeout=60).json()
        body = {"phonemes": made["phonemes"], "voice": voice, "format": "pcm"}
        pcm = httpx.post(f"{url}/v1/audio/from-phonemes", json=body, timeout=120).content
        code = whisper_code(language.tag)
        rate = error_rate([(reference, asr.transcribe(samples(pcm), RATE, code).text)], code)
        print(f"  {language.tag}: {made['phonemes'][:60]!r} -> error rate {rate:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-phonemes", action="store_true", help="skip the nine languages' phonemes")
    args = parser.parse_args()
    engine, data_dir = KokoroEngine(), Path(tempfile.mkdtemp(prefix="speakstream-voices-"))
    server = start_server(engine, data_dir=data_dir, cache_mb=0, max_load=0)
    try:
        httpx.post(f"{server.url}/v1/saved-voices", json=SAVED).raise_for_status()
        asr = recognizer()
        elevenlabs_voices(server.url, asr)
        cartesia_voices(server.url, asr)
        dialogue(server, asr)
        ssml_speakers(server)
        httpx.post(f"{server.url}/v1/saved-voices", json={"name": "gone", "blend": "af_sky"})
        httpx.delete(f"{server.url}/v1/saved-voices/gone")
    finally:
        server.stop()
    print("the store (a server restarted on the same data directory):")
    server = start_server(engine, data_dir=data_dir, cache_mb=0, max_load=0, max_saved_voices=2)
    try:
        store(server.url)
        if not args.no_phonemes:
            phonemes(server.url, engine, multilingual_recognizer())
    finally:
        server.stop()


if __name__ == "__main__":
    main()
