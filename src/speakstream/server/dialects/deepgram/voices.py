"""Deepgram's voice names as Kokoro voices: ``aura-2-thalia-en`` is read by a Kokoro voice of the
same language and gender (``af_heart``), so a client configured for Deepgram speaks without a
voice map. A language Kokoro does not speak (German, Dutch) gets the server's default voice."""

from __future__ import annotations

import re

_AURA = re.compile(r"^aura(?:-2)?-(?P<name>[a-z]+)-(?P<language>[a-z]{2})$")
_MALE = frozenset(
    "alvaro angus apollo aquila arcas aries atlas draco fabian helios hermes hyperion janus javier julius "
    "jupiter luciano mars nestor neptune odysseus orion orpheus perseus pluto saturn sirio valerio zeus".split()
)
"""Deepgram's male voices (Aura and Aura-2); the others are female."""
KOKORO_BY_LANGUAGE = {
    "en": ("af_heart", "am_michael"),
    "es": ("ef_dora", "em_alex"),
    "fr": ("ff_siwis", "ff_siwis"),
    "it": ("if_sara", "im_nicola"),
    "ja": ("jf_alpha", "jm_kumo"),
    "hi": ("hf_alpha", "hm_omega"),
    "pt": ("pf_dora", "pm_alex"),
    "zh": ("zf_xiaobei", "zm_yunjian"),
}
"""The Kokoro voice (female, male) that reads a Deepgram voice of each language, picked by the
grades of Kokoro's voice card (French has only a female voice)."""


def kokoro_voice(model: str | None) -> str | None:
    """The voice a Deepgram ``model`` names: a Deepgram voice's Kokoro stand-in, the default (None)
    for one whose language Kokoro does not speak, else the name as it is (a Kokoro or saved voice,
    checked where every voice is)."""
    if not model:
        return None
    aura = _AURA.match(model)
    if aura is None:
        return model
    pair = KOKORO_BY_LANGUAGE.get(aura["language"])
    if pair is None:
        return None
    return pair[aura["name"] in _MALE]
