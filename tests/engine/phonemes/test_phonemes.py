import pytest

from speakstream.engine.phonemes.languages import parse_language
from speakstream.engine.phonemes.phonemizer import Phonemizer, windows

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def phonemizer() -> Phonemizer:
    return Phonemizer()


def test_words_map_to_their_tokens(phonemizer: Phonemizer) -> None:
    result = phonemizer.phonemize("Hello there, world.")
    assert [w.text for w in result.words] == ["Hello", "there", "world"]
    for word in result.words:
        assert result.phonemes[word.first : word.end].strip() == result.phonemes[word.first : word.end]
    assert len(result.tokens) == len(result.phonemes)


def test_british_and_american_differ(phonemizer: Phonemizer) -> None:
    us = phonemizer.phonemize("tomato", parse_language("en-us")).phonemes
    uk = phonemizer.phonemize("tomato", parse_language("en-gb")).phonemes
    assert us != uk


def test_windows_split_at_sentence_ends_within_the_limit(phonemizer: Phonemizer) -> None:
    text = "This is one sentence here. " * 40
    parts = windows(phonemizer.phonemize(text), limit=120)
    assert len(parts) > 5
    assert all(0 < len(p.tokens) <= 120 for p in parts)
    assert all(p.phonemes.rstrip().endswith(".") for p in parts[:-1])
    assert sum(len(p.words) for p in parts) == 5 * 40
