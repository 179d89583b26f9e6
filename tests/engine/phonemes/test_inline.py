"""Inline phonemes, ``[word](/phonemes/)``, in every language's G2P."""

from __future__ import annotations

import pytest

from speakstream.data import language_samples
from speakstream.engine.phonemes.inline import as_inline, to_kokoro
from speakstream.engine.phonemes.languages import all_languages, parse_language
from speakstream.engine.phonemes.normalize import normalize
from speakstream.engine.phonemes.phonemizer import Phonemizer, vocab
from speakstream.errors import InvalidInput

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def phonemizer() -> Phonemizer:
    return Phonemizer()


@pytest.mark.parametrize(
    ("tag", "text", "given", "spoken"),
    [
        ("en-us", "We use [Kokoro](/kˈOkəɹO/) daily.", "kˈOkəɹO", "kˈOkəɹO"),
        ("en-us", "I like [tomato](/təˈmeɪtoʊ/).", "təˈmeɪtoʊ", "təmˈAtO"),
        ("en-gb", "I like [tomato](/təˈmɑːtəʊ/).", "təˈmɑːtəʊ", "təmˈɑːtQ"),
        ("es", "Hola [Zyx](/θˈiks/) amigo.", "θˈiks", "θˈiks"),
        ("fr", "Bonjour [Zyx](/zˈiks/) ami.", "zˈiks", "zˈiks"),
        ("it", "Ciao [Zyx](/dzˈiks/) amico.", "dzˈiks", "ʣˈiks"),
        ("pt-br", "Olá [Zyx](/ʒˈiks/) amigo.", "ʒˈiks", "ʒˈiks"),
        ("hi", "नमस्ते [Zyx](/zˈiks/) दोस्त।", "zˈiks", "zˈiks"),
        ("ja", "こんにちは[Zyx](/zˈiks/)さん。", "zˈiks", "zˈiks"),
        ("zh", "你好[Zyx](/zˈiks/)朋友。", "zˈiks", "zˈiks"),
    ],
)
def test_a_word_with_inline_phonemes_is_spoken_with_them_in_every_language(
    phonemizer: Phonemizer, tag: str, text: str, given: str, spoken: str
) -> None:
    language = parse_language(tag)
    result = phonemizer.phonemize(text, language, prepare=lambda plain: normalize(plain, language))
    assert spoken in result.phonemes
    word = next(w for w in result.words if w.text in ("Kokoro", "tomato", "Zyx"))
    assert result.phonemes[word.first : word.end] == spoken
    assert len(result.words) >= 2  # the words around it are still read by the language's G2P


def test_normalisation_rewrites_the_plain_text_around_inline_words_only(phonemizer: Phonemizer) -> None:
    language = parse_language("en-us")
    text = "At 10:30 say [v2.0](/vˈi tˈu/) please."
    result = phonemizer.phonemize(text, language, prepare=lambda plain: normalize(plain, language))
    assert "vˈi tˈu" in result.phonemes
    assert "v2.0" in [w.text for w in result.words]


def test_markdown_links_are_not_phonemes(phonemizer: Phonemizer) -> None:
    result = phonemizer.phonemize("Read [the guide](/docs/intro) now.")
    assert "docs" not in result.phonemes and "gˈId" in result.phonemes.replace("ɡ", "g")


@pytest.mark.parametrize("phonemes", ["k9x", "ʘʘ", "  "])
def test_phonemes_the_model_has_no_symbols_for_are_a_clear_error(phonemizer: Phonemizer, phonemes: str) -> None:
    with pytest.raises(InvalidInput, match="Kokoro does not speak") as caught:
        phonemizer.phonemize(f"Say [it](/{phonemes}/) now.")
    assert caught.value.code == "invalid_phonemes"


def test_ipa_ties_diphthongs_and_stress_map_to_kokoros_symbols() -> None:
    english, spanish = parse_language("en-us"), parse_language("es")
    assert to_kokoro("ˈd͡ʒeɪ", english, vocab()) == "ʤˈA"
    assert to_kokoro("ˈt͡ʃaɪ", spanish, vocab()) == "ʧˈaɪ"
    assert to_kokoro("'gɹeɪt", english, vocab()) == "ɡɹˈAt"
    assert to_kokoro("bəˈnænə", english, vocab()) == "bənˈænə"  # stress before the vowel, as Kokoro learned it


def test_a_mark_inside_given_phonemes_is_spoken_as_given(phonemizer: Phonemizer) -> None:
    """The round trip of ``/v1/phonemize`` and ``/v1/audio/from-phonemes``: espeak's Hindi
    ``ʊr.ˈaːn`` keeps its dot, and the word its text."""
    given = "ˌaːpkˌi ʊr.ˈaːn kˈʌl."
    result = phonemizer.phonemize(as_inline(given), parse_language("hi"))
    assert result.phonemes == given and [w.text for w in result.words] == ["ˌaːpkˌi", "ʊr.ˈaːn", "kˈʌl"]


@pytest.mark.parametrize("tag", [language.tag for language in all_languages()])
def test_a_texts_phonemes_given_back_are_spoken_as_the_text_is(phonemizer: Phonemizer, tag: str) -> None:
    """``/v1/phonemize`` then ``/v1/audio/from-phonemes`` speaks what the text speaks, in every
    language: once it did not (Hindi's ``ʊr.ˈaːn`` was read as letters, British English lost the
    full stop after "four", Chinese the space after each comma)."""
    language, sample = parse_language(tag), language_samples()[tag]
    for text in [*sample["sentences"], sample["reply"]]:
        made = phonemizer.phonemize(text, language)
        assert phonemizer.phonemize(as_inline(made.phonemes), language).tokens == made.tokens, text
