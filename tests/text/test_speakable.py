import asyncio
import re
from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speakstream.data import replies
from speakstream.text.speakable import SpeakableFilter, SpeakableOptions, aspeakable, speakable
from tests.text.strategies import fragmented

RAW_URL = re.compile(r"https?://|www\.\S+/")
BLOCKS = [
    "# Title",
    "## Sub heading",
    "- item",
    "* item",
    "1. first",
    "```py\nprint(1)\n```",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "> quote",
    "---",
    "",
]
INLINE = [
    "**bold**",
    "*it*",
    "__u__",
    "`code`",
    "[link](https://x.org/a)",
    "![img](a.png)",
    "https://example.com/x",
    "plain words",
    "more text.",
    "~~gone~~",
    "snake_case",
]
line = st.one_of(
    st.sampled_from(BLOCKS),
    st.lists(st.sampled_from(INLINE), min_size=1, max_size=6).map(" ".join),
)
markdown_text = st.lists(line, max_size=12).map("\n".join)
plain_alphabet = st.characters(blacklist_characters="*_`#|[]!<>~\\-+>", blacklist_categories=("Cs",))
plain_text = st.text(plain_alphabet, max_size=200).filter(
    lambda t: not any(line.lstrip()[:1].isdigit() for line in t.split("\n"))
)


def streamed(fragments: list[str], options: SpeakableOptions | None = None) -> str:
    spoken = SpeakableFilter(options)
    return "".join(spoken.feed(f) for f in fragments) + spoken.flush()


@settings(max_examples=400, deadline=None)
@given(fragmented(markdown_text | st.text(max_size=200)))
def test_any_fragmentation_gives_the_same_output(case: tuple[str, list[str]]) -> None:
    text, fragments = case
    assert streamed(fragments) == speakable(text)


@settings(max_examples=300, deadline=None)
@given(fragmented(plain_text))
def test_plain_text_passes_through_unchanged(case: tuple[str, list[str]]) -> None:
    text, fragments = case
    assert streamed(fragments) == text


@settings(max_examples=300, deadline=None)
@given(markdown_text)
def test_markdown_symbols_never_survive(text: str) -> None:
    out = speakable(text)
    for symbol in ("**", "#", "`", "|", "](", "~~"):
        assert symbol not in out, (text, out)
    assert not RAW_URL.search(out)


@pytest.mark.parametrize("reply", [r for r in replies().values() if r["kind"] == "markdown"], ids=lambda r: r["id"])
def test_markdown_replies_become_clean_speech(reply: dict[str, str]) -> None:
    out = speakable(reply["text"])
    for symbol in ("*", "#", "`", "|"):
        assert symbol not in out
    assert not RAW_URL.search(out)


@pytest.mark.parametrize(
    ("markdown", "spoken"),
    [
        ("Open **Settings** now.", "Open Settings now."),
        ("Go to *Privacy & Security*.", "Go to Privacy & Security."),
        ("Turn on `Two-factor authentication`.", "Turn on Two-factor authentication."),
        ("## Summary\n\nText.", "Summary.\n\nText."),
        ("- **Storage:** 100 GB\n- Devices", "Storage: 100 GB.\nDevices."),
        ("1. Open it\n2. Close it.", "1. Open it.\n2. Close it."),
        ("See [the pricing page](https://example.com/pricing) for details.", "See the pricing page for details."),
        ("An image ![a cat](cat.png) here.", "An image a cat here."),
        ("Not a link [sic] here.", "Not a link [sic] here."),
        ("Visit https://www.example.com/docs?x=1.", "Visit example.com."),
        ("| Plan | Price |\n|---|---:|\n| Basic | $5 |\n", "Plan, Price.\n\nBasic, $5.\n"),
        ("> Quoted line\nnext", "Quoted line\nnext"),
        ("Before\n---\nAfter", "Before\n\nAfter"),
        ("~~old~~ new", "old new"),
        ("keep snake_case and 2 * 3 and #48213", "keep snake_case and 2 * 3 and #48213"),
    ],
)
def test_cases(markdown: str, spoken: str) -> None:
    assert speakable(markdown) == spoken


def test_code_blocks_are_skipped_or_spoken_as_a_phrase() -> None:
    text = "Run this:\n\n```bash\nrm -rf /tmp/x\n```\n\nDone."
    assert "rm" not in speakable(text)
    phrase = speakable(text, SpeakableOptions(code_blocks="phrase", code_phrase="See the code."))
    assert "See the code." in phrase and "rm" not in phrase


def test_markers_split_across_fragments() -> None:
    spoken = SpeakableFilter()
    out = spoken.feed("This is **bo") + spoken.feed("ld** text") + spoken.feed(" ok")
    assert out + spoken.flush() == "This is bold text ok"


def test_output_streams_before_the_line_ends() -> None:
    spoken = SpeakableFilter()
    assert spoken.feed("Hello there, this is a long line ") == "Hello there, this is a long line "


def test_url_options() -> None:
    assert speakable("at https://x.org/a b", SpeakableOptions(urls="keep")) == "at https://x.org/a b"
    assert speakable("at https://x.org/a b", SpeakableOptions(urls="drop")) == "at  b"
    with pytest.raises(ValueError, match="urls"):
        SpeakableOptions(urls="spell")


def test_async_helper() -> None:
    text = replies()["list"]["text"]

    async def fragments() -> AsyncIterator[str]:
        for i in range(0, len(text), 3):
            yield text[i : i + 3]

    async def collect() -> str:
        return "".join([piece async for piece in aspeakable(fragments())])

    assert asyncio.run(collect()) == speakable(text)
