"""Mandarin with misaki's Chinese G2P as Kokoro-82M v1.0 uses it (jieba words, pypinyin tones,
cn2an numbers), word by word so every word keeps its time. Latin-script words inside Chinese
text are read by the English G2P instead of letter by letter.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

from speakstream.engine.phonemes.g2p.tokens import PUNCTUATION, Token

_PIECES = re.compile(r"([\u3400-\u4dbf\u4e00-\u9fff]+)|([A-Za-z][A-Za-z'’-]*)|(\s+)|(.)", re.DOTALL)


class ChineseWords:
    def __init__(self, english: Callable[[str], list[Token]]) -> None:
        import jieba
        from misaki.zh import ZHG2P

        jieba.setLogLevel(60)  # no "Building prefix dict" lines on stderr
        jieba.initialize()
        self._jieba = jieba
        self._zh = ZHG2P
        self._english = english

    def __call__(self, text: str) -> list[Token]:
        import cn2an

        text = self._zh.map_punctuation(cn2an.transform(text, "an2cn"))
        tokens: list[Token] = []
        for han, latin, space, other in _PIECES.findall(text):
            if han:
                tokens += [Token(w, self._word(w), False) for w in self._jieba.lcut(han, cut_all=False)]
            elif latin:
                tokens += self._english(latin)
            elif space and tokens:
                tokens[-1].whitespace = True
            elif other in PUNCTUATION:
                tokens.append(Token(other, other, False))
        for before, after in itertools.pairwise(tokens):
            before.whitespace = before.whitespace or (before.text not in PUNCTUATION and after.text not in PUNCTUATION)
        return tokens

    def _word(self, word: str) -> str:
        return str(self._zh.word2ipa(word)).replace(chr(815), "")
