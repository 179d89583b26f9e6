import contextlib
import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speakstream.errors import ProtocolError
from speakstream.protocol import (
    AppendMessage,
    CancelMessage,
    CloseMessage,
    ConfigMessage,
    FlushMessage,
    SSEReader,
    TextMessage,
    classify_frame,
    parse_client_message,
    safe_audio_frames,
    sse_event,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@pytest.mark.parametrize("binary", [False, True])
def test_every_message_type_parses_from_text_or_binary(binary: bool) -> None:
    def parse(message: dict[str, object]) -> object:
        frame = json.dumps(message)
        return parse_client_message(frame.encode() if binary else frame)

    assert parse({"type": "text", "text": "Hi", "voice": "af_bella", "speed": 1.2, "request_id": "r1"}) == TextMessage(
        text="Hi",
        request_id="r1",
        options=parse({"type": "config", "voice": "af_bella", "speed": 1.2}).options,  # type: ignore[attr-defined]
    )
    assert isinstance(parse({"type": "append", "text": "Hi"}), AppendMessage)
    assert parse({"type": "flush"}) == FlushMessage()
    assert parse({"type": "cancel", "request_id": "r1"}) == CancelMessage(request_id="r1")
    assert isinstance(parse({"type": "config", "format": "mp3", "sample_rate": 16000}), ConfigMessage)
    assert parse({"type": "close"}) == CloseMessage()


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (b"\xff\xfe{", "invalid_utf8"),
        ("not json", "invalid_json"),
        ("[1, 2]", "invalid_message"),
        ('"text"', "invalid_message"),
        ("{}", "unknown_type"),
        ('{"type": "dance"}', "unknown_type"),
        ('{"type": "text"}', "invalid_text"),
        ('{"type": "text", "text": 5}', "invalid_text"),
        ('{"type": "text", "text": "a", "speed": "fast"}', "invalid_speed"),
        ('{"type": "text", "text": "a", "speed": true}', "invalid_speed"),
        ('{"type": "text", "text": "a", "voice": 3}', "unknown_voice"),
        ('{"type": "text", "text": "a", "sample_rate": 1.5}', "invalid_sample_rate"),
        ('{"type": "text", "text": "a", "request_id": ""}', "invalid_request_id"),
        ('{"type": "text", "text": "a", "request_id": "' + "x" * 200 + '"}', "invalid_request_id"),
        ("[" * 100_000 + "]" * 100_000, "frame_too_large"),
    ],
)
def test_bad_frames_have_precise_codes(frame: str | bytes, code: str) -> None:
    with pytest.raises(ProtocolError) as info:
        parse_client_message(frame, max_bytes=65_536)
    assert info.value.code == code


def test_deep_nesting_within_the_size_limit_is_an_error_not_a_crash() -> None:
    with pytest.raises(ProtocolError):
        parse_client_message("[" * 30_000 + "]" * 30_000, max_bytes=65_536)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=300) | json_values.map(json.dumps))
def test_decoder_raises_only_protocol_errors(frame: str | bytes) -> None:
    with contextlib.suppress(ProtocolError):
        parse_client_message(frame)


def test_control_rule_handles_audio_that_begins_with_a_brace() -> None:
    audio = b"{" + bytes(range(256)) * 4
    assert classify_frame(audio) == audio
    assert classify_frame(b'{"type": "cancelled"}') == {"type": "cancelled"}
    assert classify_frame(b"{not json}") == b"{not json}"
    assert classify_frame(b"[1]") == b"[1]"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4000), st.integers(2, 512))
def test_audio_frames_never_read_as_control(data: bytes, size: int) -> None:
    frames = safe_audio_frames(data, size)
    assert b"".join(frames) == data
    assert all(isinstance(classify_frame(f), bytes) for f in frames)


def test_an_audio_frame_that_would_parse_as_json_is_split() -> None:
    sneaky = b'{"type": "error"}'
    frames = safe_audio_frames(sneaky, 1024)
    assert len(frames) == 2 and b"".join(frames) == sneaky


events = st.lists(
    st.tuples(st.sampled_from(["audio_chunk", "audio_stream_end", "error"]), json_values), min_size=1, max_size=6
)


@settings(max_examples=300, deadline=None)
@given(events, st.data(), st.sampled_from([b"\n", b"\r\n", b"\r"]))
def test_sse_reader_reassembles_events_split_anywhere(
    items: list[tuple[str, object]], data: st.DataObject, newline: bytes
) -> None:
    stream = b"".join(sse_event(name, {"v": value, "s": "é中"}) for name, value in items).replace(b"\n", newline)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(stream)), max_size=20)))
    bounds = [0, *cuts, len(stream)]
    reader = SSEReader()
    got = [e for a, b in itertools.pairwise(bounds) for e in reader.feed(stream[a:b])]
    got += reader.close()
    assert [(e.event, e.json()) for e in got] == [(n, {"v": v, "s": "é中"}) for n, v in items]


def test_sse_reader_ignores_comments_and_joins_data_lines() -> None:
    reader = SSEReader()
    events = reader.feed(b": keep-alive\n\nevent: x\ndata: a\ndata: b\nid: 7\n\n")
    assert [(e.event, e.data, e.id) for e in events] == [("x", "a\nb", "7")]
