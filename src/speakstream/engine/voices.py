"""Kokoro voices: loading, the catalogue (language, gender), and weighted blends.

A voice is a float32 tensor of 510 style rows x 256; row ``n - 1`` styles an utterance of ``n``
phoneme tokens. A blend such as ``"af_heart:0.7,af_bella:0.3"`` is the weighted mean of voices
(weights normalised to sum to one). A spec may end in ``@language`` (``"af_heart@es"``): the voice
reads that language instead of its own (see ``languages``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from speakstream.engine.phonemes.languages import Language, all_languages, of_voice, parse_language
from speakstream.errors import InvalidInput, UnknownVoice

STYLE_ROWS = 510
STYLE_DIM = 256
MAX_BLEND = 8

VOICE_ALIASES = {
    "alloy": "af_alloy",
    "ash": "am_adam",
    "ballad": "bm_george",
    "coral": "af_heart",
    "echo": "am_echo",
    "fable": "bm_fable",
    "nova": "af_nova",
    "onyx": "am_onyx",
    "sage": "af_sarah",
    "shimmer": "af_bella",
    "verse": "am_michael",
    "marin": "af_kore",
    "cedar": "am_puck",
}
"""OpenAI's voice names and the Kokoro voices that stand in for them."""
KOKORO_VOICES = (
    "af_alloy af_aoede af_bella af_heart af_jessica af_kore af_nicole af_nova af_river af_sarah "
    "af_sky am_adam am_echo am_eric am_fenrir am_liam am_michael am_onyx am_puck am_santa bf_alice "
    "bf_emma bf_isabella bf_lily bm_daniel bm_fable bm_george bm_lewis ef_dora em_alex em_santa "
    "ff_siwis hf_alpha hf_beta hm_omega hm_psi if_sara im_nicola jf_alpha jf_gongitsune jf_nezumi "
    "jf_tebukuro jm_kumo pf_dora pm_alex pm_santa zf_xiaobei zf_xiaoni zf_xiaoxiao zf_xiaoyi "
    "zm_yunjian zm_yunxi zm_yunxia zm_yunyang"
).split()
"""The 54 voices of Kokoro-82M v1.0, as its assets name them."""
_SPEC_PART = re.compile(r"\s*([a-z]{2}_[a-z0-9]{1,40})\s*(?::\s*([0-9]{1,12}(?:\.[0-9]{0,12})?|\.[0-9]{1,12})\s*)?")
"""One voice of a spec: a name and an optional weight (no two ways to read a digit: linear time)."""
_NAME_LIKE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,40}")
"""A part of a spec that is a name, if not a voice's: told the closest voices."""
MAX_SPEC_CHARS = 400
"""A voice spec's longest form (``MAX_BLEND`` voices, each with a weight, fit with room to spare)."""


@dataclass(frozen=True, slots=True)
class VoiceInfo:
    """One entry of the voice catalogue, or what a spec speaks (its language may be overridden)."""

    name: str
    speaks: Language
    gender: str
    """``female`` or ``male``."""

    @property
    def language(self) -> str:
        """BCP-47 tag of the language spoken, e.g. ``en-us``."""
        return self.speaks.tag

    @property
    def language_name(self) -> str:
        return self.speaks.name

    @property
    def british(self) -> bool:
        return self.speaks.british

    def to_dict(self) -> dict[str, str]:
        return {
            "id": self.name,
            "name": self.name,
            "language": self.language,
            "language_name": self.language_name,
            "gender": self.gender,
        }


def voice_info(name: str) -> VoiceInfo:
    gender = "female" if name[1:2] == "f" else "male"
    return VoiceInfo(name, of_voice(name), gender)


def by_language(voices: list[VoiceInfo]) -> list[dict[str, Any]]:
    """The catalogue grouped by language, in Kokoro's order: tag, name and the voices' names."""
    groups = [
        {"language": lang.tag, "name": lang.name, "voices": [v.name for v in voices if v.speaks == lang]}
        for lang in all_languages()
    ]
    return [g for g in groups if g["voices"]]


def split_language(spec: str) -> tuple[str, Language | None]:
    """``"af_heart@es"`` -> ``("af_heart", Spanish)``; a spec without ``@`` -> ``(spec, None)``."""
    voices, at, language = spec.rpartition("@")
    if not at:
        return spec, None
    return voices, parse_language(language)


def voices_of(spec: str) -> str:
    """A spec without its ``@language`` (unchecked): the voices whose styles it blends."""
    return spec.rpartition("@")[0] or spec


def with_language(spec: str, language: str) -> str:
    """``spec`` reading ``language`` (any ``@language`` it had is replaced)."""
    return f"{voices_of(spec)}@{language}"


class VoiceBank:
    """All voices in memory (54 x 510 x 256 float32, about 28 MB), with blends."""

    def __init__(self, voices: dict[str, NDArray[np.float32]]) -> None:
        if not voices:
            raise InvalidInput("no voices loaded", code="missing_asset")
        self._voices = voices
        self._blends: dict[str, NDArray[np.float32]] = {}

    @classmethod
    def from_dir(cls, voices_dir: Path) -> VoiceBank:
        voices = {}
        for path in sorted(voices_dir.glob("*.bin")):
            data = np.fromfile(path, dtype="<f4")
            if data.size != STYLE_ROWS * STYLE_DIM:
                raise InvalidInput(f"voice {path.name} has {data.size} values", code="missing_asset")
            voices[path.stem] = data.reshape(STYLE_ROWS, STYLE_DIM)
        return cls(voices)

    @property
    def names(self) -> list[str]:
        return sorted(self._voices)

    def catalogue(self) -> list[VoiceInfo]:
        return [voice_info(name) for name in self.names]

    def info(self, spec: str) -> VoiceInfo:
        """What a spec speaks: its heaviest voice's entry, in the ``@language`` if one is given."""
        if not isinstance(spec, str):
            raise UnknownVoice("voice must be a non-empty string")
        voices, language = split_language(spec)
        info = voice_info(self.parse(voices)[0][0])
        return info if language is None else VoiceInfo(info.name, language, info.gender)

    def parse(self, spec: str) -> list[tuple[str, float]]:
        """``"af_heart:0.7,af_bella:0.3"`` -> ``[("af_heart", 0.7), ("af_bella", 0.3)]``."""
        return parse_blend(spec, self._voices)

    def style(self, spec: str, tokens: int) -> NDArray[np.float32]:
        """The [1, 256] style row for an utterance of ``tokens`` phoneme tokens."""
        voice = self.resolve(spec)
        row = min(max(tokens, 1), STYLE_ROWS) - 1
        return voice[row : row + 1]

    def resolve(self, spec: str) -> NDArray[np.float32]:
        spec = voices_of(spec)
        if spec in self._voices:
            return self._voices[spec]
        cached = self._blends.get(spec)
        if cached is None:
            parts = self.parse(spec)
            cached = sum((self._voices[n] * w for n, w in parts), np.zeros((STYLE_ROWS, STYLE_DIM), np.float32))
            if len(self._blends) < 256:
                self._blends[spec] = cached
        return cached


def parse_blend(spec: str, known: Collection[str]) -> list[tuple[str, float]]:
    """A blend's voices (each of ``known``, once) and weights normalised to sum to one, the
    heaviest first; ``UnknownVoice`` says what is wrong with it."""
    if not isinstance(spec, str) or not spec.strip():
        raise UnknownVoice("voice must be a non-empty string")
    if len(spec) > MAX_SPEC_CHARS:
        raise UnknownVoice(f"a voice spec is at most {MAX_SPEC_CHARS} characters")
    parts = spec.split(",")
    if len(parts) > MAX_BLEND:
        raise UnknownVoice(f"a blend may mix at most {MAX_BLEND} voices")
    parsed: dict[str, float] = {}
    for part in parts:
        match = _SPEC_PART.fullmatch(part)
        if not match:
            name = part.split(":")[0].strip()
            if _NAME_LIKE.fullmatch(name) and name not in known:
                raise UnknownVoice(unknown_voice(name, known))
            raise UnknownVoice(f"cannot read voice {part.strip()[:40]!r}; use name or name:weight")
        name, weight = match.group(1), float(match.group(2) or 1.0)
        if name not in known:
            raise UnknownVoice(unknown_voice(name, known))
        if name in parsed:
            raise UnknownVoice(
                f"the blend names {name} twice; give each voice once, with its weight", code="invalid_blend"
            )
        parsed[name] = weight
    total = sum(parsed.values())
    if total <= 0:
        raise UnknownVoice("blend weights must add up to more than zero", code="invalid_blend")
    return sorted(((n, w / total) for n, w in parsed.items()), key=lambda nw: -nw[1])


def blend_spec(parts: list[tuple[str, float]]) -> str:
    """The spec of a parsed blend: ``"af_heart:0.6,af_bella:0.4"`` (one voice: its name)."""
    if len(parts) == 1:
        return parts[0][0]
    return ",".join(f"{name}:{round(weight, 6):g}" for name, weight in parts)


def unknown_voice(name: str, known: Collection[str]) -> str:
    """Why ``name`` is not a voice, with the closest names (by spelling, or its bare name)."""
    names = sorted(known)
    bare = {n.split("_", 1)[1]: n for n in names if "_" in n}
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    close += [bare[m] for m in difflib.get_close_matches(name, list(bare), n=3, cutoff=0.6) if bare[m] not in close]
    hint = f"; closest: {', '.join(close[:3])}" if close else ""
    return f"unknown voice {name[:40]!r}{hint}; list them with `speakstream voices` or GET /v1/audio/voices"
