import asyncio
from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speakstream.data import bench_text, replies, segmentation_cases
from speakstream.text.chunker import ChunkPolicy, IncrementalSentenceChunker, achunks, chunk_text
from tests.text.strategies import agent_text, fragmented, long_runs_text, squash

POLICIES = st.builds(
    ChunkPolicy,
    first_clause=st.booleans(),
    min_first_words=st.integers(1, 6),
    first_phrase_words=st.integers(0, 6),
    min_chunk_chars=st.integers(0, 40),
    max_chunk_chars=st.integers(8, 300),
    schedule=st.lists(st.integers(8, 200), max_size=3).map(tuple),
)


class _CompactingOften(IncrementalSentenceChunker):
    _COMPACT_AT = 8  # so that short test texts drop emitted text too (it must change nothing)


def stream(fragments: list[str], policy: ChunkPolicy | None = None) -> list[str]:
    """The chunks of a fed stream, by a chunker that compacts its buffer at every chance."""
    chunker = _CompactingOften(policy)
    chunks: list[str] = []
    for fragment in fragments:
        chunks.extend(chunker.feed(fragment))
    return chunks + chunker.flush_all()


@settings(max_examples=400, deadline=None)
@given(fragmented(), POLICIES)
def test_any_fragmentation_gives_the_whole_text_chunks(case: tuple[str, list[str]], policy: ChunkPolicy) -> None:
    text, fragments = case
    assert stream(fragments, policy) == chunk_text(text, policy)


@settings(max_examples=300, deadline=None)
@given(fragmented(long_runs_text), POLICIES)
def test_long_runs_of_marks_and_blanks_give_the_whole_text_chunks(
    case: tuple[str, list[str]], policy: ChunkPolicy
) -> None:
    text, fragments = case
    chunks = stream(fragments, policy)
    assert chunks == chunk_text(text, policy)
    assert squash("".join(chunks)) == squash(text)


@settings(max_examples=300, deadline=None)
@given(agent_text, POLICIES)
def test_chunks_rebuild_the_input_and_respect_the_maximum(text: str, policy: ChunkPolicy) -> None:
    chunks = chunk_text(text, policy)
    assert squash("".join(chunks)) == squash(text)
    assert all(chunk and chunk == chunk.strip() for chunk in chunks)
    assert all(len(chunk) <= policy.max_chunk_chars for chunk in chunks)


@settings(max_examples=200, deadline=None)
@given(fragmented(agent_text))
def test_flush_returns_the_same_remainder_for_any_fragmentation(case: tuple[str, list[str]]) -> None:
    text, fragments = case
    whole = IncrementalSentenceChunker()
    expected = whole.feed(text), whole.flush()
    parts = IncrementalSentenceChunker()
    got = [c for f in fragments for c in parts.feed(f)], parts.flush()
    assert got == expected
    assert parts.pending == "" and parts.flush() is None


KEEPS = [
    ("Dr. Smith will see you. Then go.", "Dr. Smith"),
    ("It costs $3.50 today. Pay now.", "$3.50"),
    ("Install v1.2.3 first. Then restart.", "v1.2.3"),
    ("Mail jane.doe@example.com now. Thanks.", "jane.doe@example.com"),
    ("Go to https://example.com/docs.html now. Thanks.", "https://example.com/docs.html"),
    ("We met at 5 p.m. on Friday. Nice.", "5 p.m. on Friday"),
    ("Call 555-123-4567 today. Bye.", "555-123-4567"),
    ("It is 12.5% more. Ok.", "12.5%"),
    ("Sold 1,299,000 units. Ok.", "1,299,000"),
    ("Meet at 10:30 sharp. Ok.", "10:30"),
    ("Use tools, e.g. Chrome, daily. Ok.", "e.g. Chrome"),
    ("It was 15.03.2024 then. Ok.", "15.03.2024"),
]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(KEEPS), st.data())
def test_keep_phrases_never_split_for_any_fragmentation(case: tuple[str, str], data: st.DataObject) -> None:
    text, keep = case
    _, fragments = data.draw(fragmented(st.just(text)))
    assert any(keep in chunk for chunk in stream(fragments))


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(segmentation_cases()), st.data())
def test_corpus_keep_phrases_survive_any_fragmentation(case: dict[str, object], data: st.DataObject) -> None:
    _, fragments = data.draw(fragmented(st.just(str(case["text"]))))
    chunks = stream(fragments)
    for keep in case["keep"]:  # type: ignore[attr-defined]
        assert any(keep in chunk for chunk in chunks), (keep, chunks)


def test_first_chunk_is_a_clause_and_later_chunks_grow_by_clauses() -> None:
    assert chunk_text(bench_text()) == [
        "Thanks for waiting,",
        "I found your booking.",
        "Your flight to Lisbon leaves tomorrow at 9:40 from gate B12,",
        "and boarding starts forty minutes earlier.",
        "I have moved your seat to 14C, an aisle seat near the front.",
        "Is there anything else you would like me to change for you?",
    ]
    whole_sentences = ChunkPolicy(first_clause=False, schedule=())
    assert all(chunk[-1] in ".?!" for chunk in chunk_text(bench_text(), whole_sentences))


def test_long_clauses_break_before_a_conjunction() -> None:
    text = "First one. The refund of $129.50 was approved on March 3rd and should reach your card within days."
    assert chunk_text(text, ChunkPolicy(schedule=(80, 40)))[1:] == [
        "The refund of $129.50 was approved on March 3rd",
        "and should reach your card within days.",
    ]


def test_first_chunk_may_end_before_a_phrase_when_asked() -> None:
    on = ChunkPolicy(first_phrase_words=5)
    assert chunk_text("Let me walk you through the three options. Next one.", on)[:2] == [
        "Let me walk you through",
        "the three options.",
    ]
    assert chunk_text("Let me walk you through the three options.") == ["Let me walk you through the three options."]
    assert chunk_text("Let me then go on and on.", on)[0] == "Let me then go on"  # "then" is not "the"


def test_no_phrase_cut_inside_a_quotation() -> None:
    assert (
        chunk_text('She said, "I will be there by noon." Then she left.')[0] == 'She said, "I will be there by noon."'
    )


def test_first_clause_needs_enough_words() -> None:
    policy = ChunkPolicy(min_first_words=4, first_phrase_words=0)
    assert chunk_text("Yes, I can do that for you.", policy) == ["Yes, I can do that for you."]
    assert chunk_text("Well, I can do that, for you.", policy)[0] == "Well, I can do that,"


def test_first_clause_is_emitted_before_the_sentence_ends() -> None:
    chunker = IncrementalSentenceChunker()
    assert chunker.feed("Thanks for waiting, I fo") == ["Thanks for waiting,"]
    assert chunker.pending == " I fo"


def test_the_first_chunk_soft_limit_waits_for_a_later_first_clause() -> None:
    """Found by the property test: the stream took the soft limit's clause mark while a phrase
    cut later in the sentence (which the whole text prefers) had not arrived yet."""
    policy = ChunkPolicy(min_first_words=4, first_phrase_words=1, min_chunk_chars=0, max_chunk_chars=34, schedule=(8,))
    text = "Obrigado por esperar, encontrei a sua reserva. O seu voo sai amanhã."
    whole = chunk_text(text, policy)
    assert whole[0] == "Obrigado por esperar, encontrei"
    assert stream(["O", "brigado por esperar, ", text[len("Obrigado por esperar, ") :]], policy) == whole


def test_thousands_separator_is_not_a_clause() -> None:
    assert chunk_text("About 1,299 people came, and then more.")[0] == "About 1,299 people came,"


def test_tiny_sentences_merge_after_the_first_chunk() -> None:
    chunks = chunk_text("Hello there my friend. Yes. No. That is all I have to say today.")
    assert chunks == ["Hello there my friend.", "Yes. No. That is all I have to say today."]


def test_long_sentences_are_cut_at_clauses_within_the_maximum() -> None:
    policy = ChunkPolicy(max_chunk_chars=60, schedule=())
    text = "This sentence is long, it has several clauses, and it goes on and on, until it stops."
    chunks = chunk_text(text, policy)
    assert all(len(c) <= 60 for c in chunks) and len(chunks) > 1
    assert chunks[1].endswith(",") or chunks[0].endswith(",")


def test_text_without_any_punctuation_is_cut_at_spaces() -> None:
    policy = ChunkPolicy(max_chunk_chars=40, schedule=())
    chunks = chunk_text("word " * 100, policy)
    assert all(len(c) <= 40 for c in chunks)
    assert squash("".join(chunks)) == squash("word " * 100)


def test_soft_schedule_prefers_clauses_to_spaces() -> None:
    text = "Your flight to Lisbon leaves tomorrow at 9:40 from gate B12, and boarding starts forty minutes earlier."
    policy = ChunkPolicy(first_clause=False, schedule=(30,))
    assert chunk_text(text, policy)[0] == "Your flight to Lisbon leaves tomorrow at 9:40 from gate B12,"


def test_flush_returns_text_without_final_punctuation() -> None:
    chunker = IncrementalSentenceChunker(ChunkPolicy(first_phrase_words=0))
    assert chunker.feed("Sure thing I will set a reminder") == []
    assert chunker.flush() == "Sure thing I will set a reminder"
    assert chunker.flush() is None


def test_chunker_is_reusable_after_flush() -> None:
    chunker = IncrementalSentenceChunker(ChunkPolicy(first_phrase_words=0))
    chunker.feed("One reply, with a clause. ")
    chunker.flush()
    assert chunker.feed("Second reply, with a clause and more. Next") == ["Second reply, with a clause and more."]


def test_every_corpus_reply_chunks_within_limits() -> None:
    for reply in replies().values():
        chunks = chunk_text(reply["text"])
        assert squash("".join(chunks)) == squash(reply["text"])


@pytest.mark.parametrize("size", [1, 2, 4])
def test_async_helper_streams_chunks(size: int) -> None:
    text = bench_text()

    async def fragments() -> AsyncIterator[str]:
        for i in range(0, len(text), size):
            yield text[i : i + size]

    async def collect() -> list[str]:
        return [chunk async for chunk in achunks(fragments())]

    assert asyncio.run(collect()) == chunk_text(text)


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="max_chunk_chars"):
        ChunkPolicy(max_chunk_chars=2)
    with pytest.raises(ValueError, match="schedule"):
        ChunkPolicy(schedule=(3,))
