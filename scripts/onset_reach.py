"""How much of a chunk's first sound is lost at its head, with each reach before its first word.

    python scripts/onset_reach.py [--reaches 0,0.13] [--voices 28]

Kokoro's decoder starts a word's sound before the word's frames (by the durations). A chunk is
decoded from ``EdgePolicy.onset_reach_s`` (and the lead) before its first word, and its first piece
cut to its speech (``edges.trim_onset``); a reach of 0 cuts at the durations, as before. For each
reach (an engine built with it), over 16 short texts and the English voices: the loudest 10 ms that
the chunk's head cut away (dB under the peak of the same utterance decoded from its first frame),
the silence the chunk starts with, and how often Whisper heard the first word (six voices, twelve
texts).
"""

from __future__ import annotations

import argparse

import numpy as np

from speakstream.bench.asr import normalize_words, recognizer
from speakstream.engine.config import EngineConfig
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.phonemes.phonemizer import windows
from speakstream.engine.windows.edges import EdgePolicy, frame_db
from speakstream.engine.windows.planner import Decode

TEXTS = [
    "Sure, here is the next part.",
    "She sells sea shells.",
    "Fine, thanks.",
    "So, what now?",
    "Hello there.",
    "Five fish.",
    "Zebras are striped.",
    "Thanks for waiting.",
    "Sit down, please.",
    "Fresh coffee is ready.",
    "Seven people came.",
    "Heavy rain is coming.",
    "I have moved your seat.",
    "Your flight leaves at noon.",
    "Check the gate.",
    "Certainly.",
]
HEARD_VOICES = ("af_heart", "am_michael", "bf_emma", "af_bella", "am_adam", "bm_george")
FRAME = 240
"""10 ms at 24 kHz: ``frame_db``'s frames."""


def _head(engine: KokoroEngine, text: str, voice: str) -> tuple[float, float]:
    """The loudest 10 ms cut before the chunk's first sample (dB under the peak), and the silence
    it starts with (ms before its first 10 ms within the edge threshold)."""
    runner = engine.runner
    assert runner is not None
    part = windows(engine.phonemizer.phonemize(text))[0]
    style = engine.voice_bank.style(voice, len(part.tokens))
    u = runner.front(part, style, 1.0, text, None, edges=engine.edges)
    whole = frame_db(runner.decode(u, Decode(0, u.frames, 0, u.frames), None), 24_000)
    chunk = engine.synthesize(text, voice=voice)
    start = u.head + round((u.words[0].start_s - chunk.words[0].start_s) * 24_000)
    cut = float(whole[: start // FRAME].max()) if start >= FRAME else -120.0
    silence = np.flatnonzero(frame_db(chunk.samples, 24_000) > EdgePolicy().threshold_db)[0] * FRAME / 24
    return cut, float(silence)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reaches", default=f"0,{EdgePolicy().onset_reach_s}")
    parser.add_argument("--voices", type=int, default=28, help="the first this many English voices")
    args = parser.parse_args()
    asr = recognizer()
    print(
        "reach s | chunks | loudest cut, dB: median / p90 / max | over -30 dB "
        "| starting silence ms: median / max | first words heard"
    )
    for reach in (float(r) for r in args.reaches.split(",")):
        engine = KokoroEngine(EngineConfig(edges=EdgePolicy(onset_reach_s=reach)))
        english = [name for name in engine.voice_bank.names if name[:2] in ("af", "am", "bf", "bm")]
        heads = np.array([_head(engine, t, v) for v in english[: args.voices] for t in TEXTS])
        heard = [
            normalize_words(asr.transcribe(engine.synthesize(t, voice=v).samples, 24_000).text)[:1]
            == normalize_words(t)[:1]
            for v in HEARD_VOICES
            for t in TEXTS[:12]
        ]
        cut, silence = heads[:, 0], heads[:, 1]
        print(
            f"{reach:7.2f} | {len(heads)} | {np.median(cut):.0f} / {np.percentile(cut, 90):.0f} / {cut.max():.0f} "
            f"| {np.mean(cut > -30):.1%} | {np.median(silence):.0f} / {silence.max():.0f} "
            f"| {sum(heard)} of {len(heard)}",
            flush=True,
        )


if __name__ == "__main__":
    main()
