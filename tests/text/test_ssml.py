"""SSML read as it arrives (``SsmlReader``) and a reply's script (``Script``): each element, the
errors with their positions, and any fragmentation giving the whole document's parts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from speakstream.errors import InvalidInput
from speakstream.text import ChunkPolicy, IncrementalSentenceChunker
from speakstream.text.lexicon import Lexicon, Rule
from speakstream.text.script import Part, Say, Script
from speakstream.text.ssml import Pause, Reading, SsmlReader, is_ssml
from tests.scaling import RATIO_LIMIT, growth

DOCUMENT = (
    '<speak>Hello there, I am <sub alias="Saturday">Zorbixal</sub>. <break time="1.5s"/> Call '
    '<say-as interpret-as="telephone">555-1234</say-as> on the <say-as interpret-as="ordinal">3</say-as>.'
    "<p><s>A new paragraph</s><s>and its second sentence</s></p>"
    '<lang xml:lang="es">Hola, ¿cómo estás?</lang> <prosody rate="slow">Slowly <prosody rate="200%">'
    'fast</prosody> now.</prosody> Spell <say-as interpret-as="characters">XKQ</say-as>, a '
    '<phoneme alphabet="ipa" ph="bəˈnænə">Qwertle</phoneme> &amp; a <emphasis>Zorbixal</emphasis>. '
    '<break strength="weak"/><break/></speak>'
)


def _script(*, always: bool = False, lexicon: Lexicon | None = None) -> Script:
    rewriter = lexicon.rewriter() if lexicon else None
    return Script(IncrementalSentenceChunker(ChunkPolicy()), rewriter, SsmlReader(always=always))


def _whole(text: str, **options: object) -> list[Part]:
    script = _script(**options)  # type: ignore[arg-type]
    return [*script.feed(text), *script.end()]


def _fed(fragments: list[str], **options: object) -> list[Part]:
    script = _script(**options)  # type: ignore[arg-type]
    return [*(part for fragment in fragments for part in script.feed(fragment)), *script.end()]


def test_a_document_becomes_chunks_pauses_and_readings() -> None:
    spanish, slow = Reading(language="es"), Reading(speed=0.8)
    assert _whole(DOCUMENT) == [
        Say("Hello there, I am Saturday."),
        Pause(1.5),
        Say("Call 5 5 5, 1 2 3 4 on the 3rd."),
        Say("A new paragraph"),
        Say("and its second sentence"),
        Say("Hola, ¿cómo estás?", spanish),
        Say("Slowly", slow),
        Say("fast", Reading(speed=1.6)),
        Say("now.", slow),
        Say("Spell X. K. Q, a [Qwertle](/bəˈnænə/) & a Zorbixal."),
        Pause(0.25),
        Pause(0.4),
    ]


def test_plain_text_is_not_ssml_unless_the_client_says_so() -> None:
    text = "Use x < y & keep <b>bold</b> as it is."
    assert _whole(text) == [Say(text)]
    assert _whole("Wait <break time='500ms'/> go.", always=True) == [Say("Wait"), Pause(0.5), Say("go.")]
    assert is_ssml("  <speak>hi</speak>", None) and is_ssml("<?xml version='1.0'?><speak/>", None)
    assert not is_ssml("<speak>hi</speak>", "text") and is_ssml("hi", "ssml") and not is_ssml("hi", None)


def test_unknown_elements_are_ignored_and_their_text_spoken() -> None:
    assert _whole('<speak><mark name="a"/><audio src="x.wav">a bell</audio> rings.</speak>') == [Say("a bell rings.")]


@pytest.mark.parametrize(
    ("text", "where", "why"),
    [
        ("<speak>hi <b>x</speak>", "line 1, column 17", "mismatched tag"),
        ("<speak>\nline two <break time='20s'/></speak>", "line 2", "at most 10 s"),
        ("<speak>é <sub>x</sub></speak>", "column 21", "needs an alias"),
        ("<speak>unfinished", "line 1", "no element found"),
        ("<speak><break time='soon'/></speak>", "line 1", "not a time"),
        ("<speak><prosody rate='warp'>x</prosody></speak>", "line 1", "prosody rate"),
        ("<speak><phoneme alphabet='klingon' ph='x'>x</phoneme></speak>", "line 1", "alphabet"),
        ('<?xml version="1.0"?><!DOCTYPE speak [<!ENTITY a "aaaa">]><speak>&a;</speak>', "line 1", "DOCTYPE"),
        ("<speak>&nbsp;</speak>", "line 1", "undefined entity"),
    ],
)
def test_malformed_ssml_is_invalid_ssml_with_its_position(text: str, where: str, why: str) -> None:
    with pytest.raises(InvalidInput) as error:
        _whole(text, always=True)
    assert error.value.code == "invalid_ssml"
    assert where in str(error.value) and why in str(error.value), error.value


def test_pronunciation_rules_apply_to_the_text_of_ssml() -> None:
    lexicon = Lexicon([Rule(string="Zorbixal", alias="Saturday")])
    text = "<speak>On <emphasis>Zorbixal</emphasis>, <sub alias='Monday'>Zorbixal</sub>.</speak>"
    parts = _whole(text, lexicon=lexicon)
    assert parts == [Say("On Saturday, Monday.")]


def test_a_client_chunk_of_ssml_is_cut_where_it_ends() -> None:
    script = _script(always=True)
    parts = [*script.chunk("First part <break time='1s'/> still first"), *script.chunk("second."), *script.end()]
    assert parts == [Say("First part"), Pause(1.0), Say("still first"), Say("second.")]


_MARKUP = st.lists(
    st.sampled_from(
        [
            "Hello there, ",
            "how are you today? ",
            '<break time="300ms"/>',
            '<sub alias="Saturday">Zorbixal</sub> ',
            '<say-as interpret-as="characters">abc</say-as> ',
            '<phoneme alphabet="ipa" ph="bəˈnænə">Qwertle</phoneme> ',
            "<s>A sentence</s>",
            '<prosody rate="fast">quickly said. </prosody>',
            '<lang xml:lang="es">Hola amigos. </lang>',
            "Zorbixal &amp; [Qwertle](/bənˈænə/) said. ",
        ]
    ),
    min_size=1,
    max_size=8,
)


@given(_MARKUP, st.lists(st.integers(min_value=1, max_value=400), max_size=12))
def test_any_fragmentation_gives_the_whole_documents_parts(pieces: list[str], cuts: list[int]) -> None:
    document = "<speak>" + "".join(pieces) + "</speak>"
    lexicon = Lexicon([Rule(string="Zorbixal", alias="Saturday"), Rule(string="Qwertle", phoneme="bəˈnænə")])
    places = sorted({cut % len(document) for cut in cuts} - {0})
    fragments = [document[a:b] for a, b in zip([0, *places], [*places, len(document)], strict=True)]
    assert _fed(fragments, lexicon=lexicon) == _whole(document, lexicon=lexicon)


HOSTILE_SSML = [
    '<break time="1ms"/>',
    '<prosody rate="fast">',
    '<say-as interpret-as="characters">ab',
    "<s>a</s>",
    '<sub alias="x">y</sub>',
    "&amp;",
    '<lang xml:lang="es">',
    "<p>",
    '<phoneme ph="a">',
]


def _fed_ssml(text: str) -> None:
    script = _script(always=True)
    try:
        for i in range(0, len(text), 7):
            script.feed(text[i : i + 7])
        script.end()
    except InvalidInput:
        pass  # an unclosed element is an error at the end, after the whole text was read


@pytest.mark.parametrize("unit", HOSTILE_SSML)
def test_hostile_ssml_costs_linear_time(unit: str) -> None:
    assert growth(_fed_ssml, unit) < RATIO_LIMIT
