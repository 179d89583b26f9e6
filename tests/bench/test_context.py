"""The bench context: a quick run shortens the replies it speaks, a full run speaks them whole; and
one made for an in-process server."""

from pathlib import Path
from types import SimpleNamespace

from speakstream.bench.context import BenchContext, EngineHolder, device_info, widest_vector
from speakstream.data import bench_text, language_samples

REPLY = "Thanks for waiting. Your flight leaves at nine. I moved your seat. Anything else?"


def context(quick: bool) -> BenchContext:
    return BenchContext(out=Path("."), quick=quick, ws_url="", http_url="", engine_source=EngineHolder())


def test_a_full_run_speaks_the_whole_reply() -> None:
    assert context(quick=False).sized(REPLY) == REPLY


def test_a_quick_run_speaks_the_first_sentences() -> None:
    assert context(quick=True).sized(REPLY) == "Thanks for waiting."
    assert context(quick=True).sized(REPLY, quick_sentences=2) == "Thanks for waiting. Your flight leaves at nine."


def test_a_quick_run_keeps_a_sentence_of_every_language_and_of_the_bench_text() -> None:
    for sample in language_samples().values():
        first = context(quick=True).sized(sample["reply"])
        assert first and sample["reply"].startswith(first) and len(first) < len(sample["reply"])
    assert bench_text().startswith(context(quick=True).sized(bench_text(), quick_sentences=2))


def test_a_context_for_an_in_process_server_uses_its_urls_engine_and_runtime() -> None:
    engine = object()
    runtime = SimpleNamespace(engine=engine)
    server = SimpleNamespace(ws_url="ws://x/ws", url="http://x", runtime=runtime)
    ctx = BenchContext.in_process(server)
    assert (ctx.ws_url, ctx.http_url, ctx.runtime, ctx.quick) == ("ws://x/ws", "http://x", runtime, False)
    assert ctx.engine_source() is engine


def test_the_widest_vector_extension_is_named() -> None:
    assert widest_vector("fpu sse4_1 avx avx2 avx512f avx512bw".split()) == "AVX-512"
    assert widest_vector("fpu sse4_1 avx avx2 fma".split()) == "AVX2"
    assert widest_vector(["fpu"]) is None
    assert "vector" in device_info()
