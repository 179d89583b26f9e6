"""Which writing systems each language's G2P can read, so text in another one is a clear error
("this voice cannot read Chinese script") rather than "Chinese letter, Chinese letter"."""

from __future__ import annotations

import re

from speakstream.engine.phonemes.languages import Language
from speakstream.errors import InvalidInput

_SCRIPTS = {
    "Chinese (Han)": r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff",
    "Japanese kana": r"\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f",
    "Devanagari": r"\u0900-\u097f",
    "Hangul": r"\u1100-\u11ff\u3130-\u318f\uac00-\ud7af",
    "Cyrillic": r"\u0400-\u04ff",
    "Arabic": r"\u0600-\u06ff",
    "Hebrew": r"\u0590-\u05ff",
    "Thai": r"\u0e00-\u0e7f",
}
_READS = {
    "zh": ("Chinese (Han)",),
    "ja": ("Chinese (Han)", "Japanese kana"),
    "hi": ("Devanagari",),
}
_FOREIGN = {
    tag: re.compile("[" + "".join(r for name, r in _SCRIPTS.items() if name not in reads) + "]")
    for tag, reads in {**_READS, "": ()}.items()
}
_NAMES = [(name, re.compile(f"[{ranges}]")) for name, ranges in _SCRIPTS.items()]


def check_script(text: str, language: Language) -> None:
    """Raise ``InvalidInput`` (``unsupported_text``) if ``text`` has letters ``language`` cannot read."""
    found = _FOREIGN.get(language.tag, _FOREIGN[""]).search(text)
    if found is None:
        return
    script = next(name for name, pattern in _NAMES if pattern.match(found.group()))
    raise InvalidInput(
        f"the {language.name} G2P cannot read {script} script ({found.group()!r}); "
        "choose a voice of that language or set 'language'",
        code="unsupported_text",
    )
