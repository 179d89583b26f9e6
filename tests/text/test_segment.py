import pytest

from speakstream.data import segmentation_cases
from speakstream.text import ChunkPolicy, chunk_text
from speakstream.text.segment import split_sentences


def texts(text: str) -> list[str]:
    return [span.text for span in split_sentences(text)]


def test_spans_point_into_the_source() -> None:
    source = "  Hello there.  How are you?\n\nFine. "
    for span in split_sentences(source):
        assert source[span.start : span.end] == span.text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Dr. Smith will see you now. Please come in.", ["Dr. Smith will see you now.", "Please come in."]),
        ("Mr. and Mrs. Jones arrived. They sat.", ["Mr. and Mrs. Jones arrived.", "They sat."]),
        ("Use a tool, e.g. Chrome or Firefox. Done.", ["Use a tool, e.g. Chrome or Firefox.", "Done."]),
        ("It is red, i.e. hot. Next.", ["It is red, i.e. hot.", "Next."]),
        ("Cats vs. dogs is old. New topic.", ["Cats vs. dogs is old.", "New topic."]),
        ("Apples, pears, etc. are fruit. Yes.", ["Apples, pears, etc. are fruit.", "Yes."]),
        ("We met at 5 p.m. on Friday. It went well.", ["We met at 5 p.m. on Friday.", "It went well."]),
        ("The U.S. team won. The U.K. team came second.", ["The U.S. team won.", "The U.K. team came second."]),
        ("It costs $3.50. Pay now.", ["It costs $3.50.", "Pay now."]),
        ("Pi is 3.14159. Enough.", ["Pi is 3.14159.", "Enough."]),
        ("We sold 1,299,000 units. Great.", ["We sold 1,299,000 units.", "Great."]),
        ("Growth was 12.5%. Nice.", ["Growth was 12.5%.", "Nice."]),
        ("Install v1.2.3 first. Then restart.", ["Install v1.2.3 first.", "Then restart."]),
        ("The meeting is at 10:30. Be on time.", ["The meeting is at 10:30.", "Be on time."]),
        ("It was due 2024-03-15. It is late.", ["It was due 2024-03-15.", "It is late."]),
        ("It was due 15.03.2024. It is late.", ["It was due 15.03.2024.", "It is late."]),
        ("Call +1 (555) 123-4567. We answer.", ["Call +1 (555) 123-4567.", "We answer."]),
        ("Go to https://example.com/a.b?c=d. It works.", ["Go to https://example.com/a.b?c=d.", "It works."]),
        ("Mail jane.doe@example.co.uk. I reply.", ["Mail jane.doe@example.co.uk.", "I reply."]),
        ("Wait... what was that? I heard it.", ["Wait... what was that?", "I heard it."]),
        ("She was late… She came.", ["She was late…", "She came."]),
        ('He asked, "Are you coming?" I said yes.', ['He asked, "Are you coming?"', "I said yes."]),
        ('"Stop." Then he left.', ['"Stop."', "Then he left."]),
        ('"Are you sure?" she asked.', ['"Are you sure?" she asked.']),
        ("It works (mostly.) Try it.", ["It works (mostly.)", "Try it."]),
        ("Steps:\n1. Open it.\n2. Close it.", ["Steps:", "1. Open it.", "2. Close it."]),
        ("First para.\n\nSecond para", ["First para.", "Second para"]),
        ("A wrapped\nline goes on. End.", ["A wrapped\nline goes on.", "End."]),
        ("今日は晴れです。明日は雨です。", ["今日は晴れです。", "明日は雨です。"]),
        ("你好！你是谁？我很好", ["你好！", "你是谁？", "我很好"]),
        ("The answer is 42.", ["The answer is 42."]),
        ("The answer is 42", ["The answer is 42"]),
        ("See No. 5 and Fig. 3 here. Ok.", ["See No. 5 and Fig. 3 here.", "Ok."]),
        ("J. R. R. Tolkien wrote it. Read it.", ["J. R. R. Tolkien wrote it.", "Read it."]),
        (
            "Visit the St. Mary's clinic on Baker St. Bring a card.",
            ["Visit the St. Mary's clinic on Baker St.", "Bring a card."],
        ),
        ("Really?! Yes!!", ["Really?!", "Yes!!"]),
        ("", []),
        ("   \n  ", []),
    ],
)
def test_cases(text: str, expected: list[str]) -> None:
    assert texts(text) == expected


def test_corpus_keeps_every_keep_phrase_inside_one_sentence() -> None:
    for case in segmentation_cases():
        sentences = texts(str(case["text"]))
        assert len(sentences) >= 2, case
        for keep in case["keep"]:  # type: ignore[attr-defined]
            assert any(keep in s for s in sentences), (keep, sentences)


def test_a_long_run_of_marks_is_one_sentence_end() -> None:
    """A run of terminators is decided 16 at a time; the run still ends the sentence once."""
    assert texts("Wait" + "!" * 40 + " Next one.") == ["Wait" + "!" * 40, "Next one."]
    assert texts("And" + "." * 20 + " then.") == ["And" + "." * 20 + " then."]


def test_a_long_blank_gap_ends_a_sentence() -> None:
    """Past 64 blank characters the next word is not looked for: the sentence has ended."""
    assert texts("Done." + " " * 10 + "then more.") == ["Done." + " " * 10 + "then more."]
    assert texts("Done." + " " * 100 + "then more.") == ["Done.", "then more."]


@pytest.mark.parametrize(
    "text",
    [
        "Look at No. 12 in the list. Then call us.",
        "It was built ca. 1900 by hand. Then it burned.",
        "The sale ends Jan. 15 at noon. Come early.",
        "Apply it max. 3 times a day. Then rest.",
        "See Eq. 4 and Pt. 2 of the paper. Then ask.",
        "Vea la pág. 12 del libro. Luego hablamos.",  # es
        "Es el núm. 3 de la lista. Luego sigue.",
        "Voir le chap. 2 et la p. 7. Puis on parle.",  # fr
        "Vedi la pag. 5 e il n. 4. Poi parliamo.",  # it
        "Veja a pág. 9 do cap. 3. Depois falamos.",  # pt
    ],
)
def test_an_abbreviation_before_a_number_is_not_a_sentence_end(text: str) -> None:
    sentences = split_sentences(text)
    assert len(sentences) == 2, [s.text for s in sentences]
    assert chunk_text(text, ChunkPolicy(first_clause=False, schedule=()))[0] == sentences[0].text  # the chunker too


@pytest.mark.parametrize(
    "text",
    [
        "La Sra. García llegó tarde. Luego habló.",  # es
        "Pregunte al Lic. Pérez por su pedido. Gracias.",
        "M. Dupont vous attend ici. Puis on parle.",  # fr
        "Il Dott. Rossi arriva subito. Poi parliamo.",  # it
        "O Exmo. Senhor Silva chegou cedo. Depois falamos.",  # pt
        "डॉ. शर्मा अभी आएंगे। फिर हम बात करेंगे।",  # hi
    ],
)
def test_a_title_in_another_language_is_not_a_sentence_end(text: str) -> None:
    sentences = split_sentences(text)
    assert len(sentences) == 2, [s.text for s in sentences]
    assert chunk_text(text, ChunkPolicy(first_clause=False, schedule=()))[0] == sentences[0].text
