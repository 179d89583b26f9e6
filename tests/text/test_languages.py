"""The text stage in every language: sentence ends without spaces (。！？), the danda, ¿¡, « »,
「」; first-clause cuts at CJK commas; streaming gives the whole text's chunks under any
fragmentation, for texts built from each language's own words and marks."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speakstream.data import language_samples
from speakstream.text import split_sentences
from speakstream.text.chunker import ChunkPolicy, chunk_text
from tests.text.strategies import fragmented, squash
from tests.text.test_chunker import POLICIES, stream

TAGS = sorted(language_samples())
_CJK_CHARS = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def pieces(tag: str) -> list[str]:
    """The words and marks of a language's samples (CJK: characters), plus its punctuation."""
    sample = language_samples()[tag]
    text = " ".join([*sample["sentences"], sample["reply"]])
    words = list(set(_CJK_CHARS.findall(text))) if tag in ("zh", "ja") else sorted(set(text.split()))
    return [
        *words,
        "。",
        "，",
        "、",
        "！",
        "？",
        "।",
        "¿",
        "¡",
        "«",
        "»",
        "「",
        "」",
        ".",
        ",",
        "?",
        " ",
        "\n",
        "9:40",
        "12",
    ]


def language_text(tag: str) -> st.SearchStrategy[str]:
    separator = "" if tag in ("zh", "ja") else " "
    built = st.lists(st.sampled_from(pieces(tag)), max_size=120).map(separator.join)
    return built | st.just(language_samples()[tag]["reply"])


@pytest.mark.parametrize("tag", TAGS)
@settings(max_examples=120, deadline=None)
@given(data=st.data(), policy=POLICIES)
def test_any_fragmentation_gives_the_whole_text_chunks_in_every_language(
    tag: str, data: st.DataObject, policy: ChunkPolicy
) -> None:
    text, fragments = data.draw(fragmented(language_text(tag)))
    chunks = stream(fragments, policy)
    assert chunks == chunk_text(text, policy)
    assert squash("".join(chunks)) == squash(text)
    assert all(len(chunk) <= policy.max_chunk_chars for chunk in chunks)


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("你好。今天天气很好！我们去吧？", ["你好。", "今天天气很好！", "我们去吧？"]),
        ("お待たせしました。見つかりました！", ["お待たせしました。", "見つかりました！"]),
        ("「ありがとう。」と彼は言った。", ["「ありがとう。」", "と彼は言った。"]),
        ("नमस्ते। आप कैसे हैं? ठीक हूँ।", ["नमस्ते।", "आप कैसे हैं?", "ठीक हूँ।"]),
        ("¡Hola! ¿Cómo estás? Bien.", ["¡Hola!", "¿Cómo estás?", "Bien."]),
        ("« Bonjour ! » Il sourit. Voilà.", ["« Bonjour ! »", "Il sourit.", "Voilà."]),
        ("Son las 9:40. El precio es 3,50 euros.", ["Son las 9:40.", "El precio es 3,50 euros."]),
    ],
)
def test_sentence_ends_in_every_script(text: str, sentences: list[str]) -> None:
    assert [s.text for s in split_sentences(text)] == sentences


@pytest.mark.parametrize(
    ("tag", "first"),
    [
        ("zh", "感谢您的耐心等待，"),
        ("ja", "お待たせしました、"),
        ("es", "Gracias por esperar,"),
        ("fr-fr", "Merci de votre patience,"),
        ("hi", "इंतज़ार के लिए धन्यवाद,"),
    ],
)
def test_the_first_chunk_ends_at_the_first_clause_in_every_language(tag: str, first: str) -> None:
    assert chunk_text(language_samples()[tag]["reply"])[0] == first


def test_a_cjk_clause_needs_enough_characters() -> None:
    assert chunk_text("你好，今天天气很好。")[0] == "你好，今天天气很好。"  # 2 characters are too few


def test_a_long_cjk_sentence_without_marks_is_cut_within_the_maximum() -> None:
    text = "天" * 700 + "。"
    chunks = chunk_text(text)
    assert "".join(chunks) == text and all(len(c) <= ChunkPolicy().max_chunk_chars for c in chunks)
