"""W3C PLS files in and out."""

from __future__ import annotations

import pytest

from speakstream.errors import InvalidInput
from speakstream.text import pls
from speakstream.text.lexicon import Rule

DOCUMENT = """<?xml version="1.0" encoding="UTF-8"?>
<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon"
         alphabet="ipa" xml:lang="en-US">
  <lexeme><grapheme>UN</grapheme><grapheme>U.N.</grapheme><alias>United Nations</alias></lexeme>
  <lexeme><grapheme>tomato</grapheme><phoneme>təˈmɑːtoʊ</phoneme></lexeme>
  <lexeme><grapheme>Kokoro</grapheme><phoneme alphabet="x-cmu-arpabet">K OW1 K AO0 R OW0</phoneme></lexeme>
</lexicon>
"""


def test_a_pls_file_becomes_alias_and_phoneme_rules() -> None:
    rules = pls.parse(DOCUMENT.encode())
    assert rules == [
        Rule(string="UN", alias="United Nations"),
        Rule(string="U.N.", alias="United Nations"),
        Rule(string="tomato", phoneme="təˈmɑːtoʊ"),
        Rule(string="Kokoro", phoneme="K OW1 K AO0 R OW0", alphabet="cmu-arpabet"),
    ]


def test_rules_written_as_pls_read_back_the_same() -> None:
    rules = pls.parse(DOCUMENT.encode())
    assert pls.parse(pls.dump(rules).encode()) == rules


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        (b"<lexicon><lexeme>", "well-formed"),
        (b"<html/>", "root element"),
        (b'<lexicon alphabet="x-sampa"/>', "alphabet"),
        (b"<lexicon><lexeme><grapheme>a</grapheme></lexeme></lexicon>", "lexeme 1"),
        (b'<!DOCTYPE x [<!ENTITY a "aaaa">]><lexicon/>', "DOCTYPE"),
        (b"<lexicon>" + b" " * pls.MAX_BYTES + b"</lexicon>", "at most"),
    ],
)
def test_a_bad_file_is_refused_with_the_reason(document: bytes, reason: str) -> None:
    with pytest.raises(InvalidInput, match=reason) as caught:
        pls.parse(document)
    assert caught.value.code == "invalid_pls"
