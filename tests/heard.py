"""How far Whisper base may mishear speech in each language, pooled over the language's first two
voices: shared by the engine's language test and the server's speech-from-phonemes test."""

from __future__ import annotations

THRESHOLDS = {
    "en-us": 0.10,
    "en-gb": 0.10,
    "es": 0.20,
    "fr-fr": 0.45,
    "hi": 0.35,
    "it": 0.30,
    "ja": 0.35,
    "pt-br": 0.20,
    "zh": 0.45,
}
"""Most a language's error rate may be (WER; CER for zh, ja and hi), over its first two voices.
Measured (``speakstream bench languages``, 2026-11-30): en-us 1.8%, en-gb 1.7%, es 8.3%, fr-fr
30.0% (one voice), hi 15.6% (scored in Urdu script), it 14.8%, ja 18.8%, pt-br 6.7%, zh 32%
(zf_xiaoni alone 59%). Through the wrong G2P they are far worse: Chinese and Japanese through
espeak-ng measure 63% and 250% CER."""
