"""Abuse: attacks on a real server process while a well-behaved client measures what it hears
(first audio, and gaps as a real-time player would play its reply) and ``/ping``; each attack's
outcome, and the client's p95 first audio under attack vs quiet.

The well-behaved client speaks from another address (127.0.0.2), as a real second user would, so
per-client turns apply to it. Attacks: hostile texts and fields, appends never flushed, responses
never read, bodies that never finish, a flood of handshakes, one client's parallel flood, and
cross-site WebSockets. Tighter timeouts than the defaults keep the suite short; the mechanisms
are the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

import httpx
import websockets

from speakstream.bench.player import Playback, pcm_arrivals, play
from speakstream.bench.process import ServerProcess
from speakstream.bench.sim.flood import POLITE_TEXT, RETRY_S
from speakstream.bench.stats import summary
from speakstream.data import replies
from speakstream.loadtest.harness import raw_http

GOOD_ADDRESS = "127.0.0.2"
LONG_TEXT = replies()["long"]["text"]
LIMITS = {
    "SPEAKSTREAM_TEXT_IDLE_S": "3",
    "SPEAKSTREAM_SEND_TIMEOUT_S": "3",
    "SPEAKSTREAM_BODY_TIMEOUT_S": "3",
    "SPEAKSTREAM_MAX_CLIENT_QUEUE": "32",  # what a server on a public address has by default
    "SPEAKSTREAM_CACHE_MB": "0",  # the well-behaved client repeats its text: the engine must make it each time
    # turns shared by client are what is measured here; with admission by capacity a flood of long
    # replies would hold the room for their whole length (the load and overload suites test that)
    "SPEAKSTREAM_MAX_LOAD": "0",
}
HOSTILE_TEXTS = ["!" * 20_000, "\n" * 20_000, "e.g. " * 4_000, "[" * 20_000, " " * 19_990 + "Hi.", "a." * 10_000]
Outcome = dict[str, Any]
Attack = Callable[[ServerProcess, asyncio.Event], Coroutine[Any, Any, Outcome]]
"""Runs until the event is set (the measurement is over), then cleans up and says what happened."""


async def good_reply(client: httpx.AsyncClient) -> tuple[Playback, int]:
    """One reply as a polite client hears it: retried after a retryable refusal (the wait counts),
    read to the end and played in real time, so a gap after its first words counts as well as a
    late first word. Returns (what was heard, refusals)."""
    started, body = time.perf_counter(), {"text": POLITE_TEXT, "format": "pcm"}
    for refusals in range(100):
        async with client.stream("POST", "/invocations", json=body) as response:
            if response.status_code == 503:
                await response.aread()
                await asyncio.sleep(RETRY_S)
                continue
            response.raise_for_status()
            arrivals = [(time.perf_counter(), len(data)) async for data in response.aiter_raw()]
            return play(pcm_arrivals(arrivals), started), refusals
    raise RuntimeError("the well-behaved client was refused 100 times")


async def _measure(url: str, trials: int) -> dict[str, Any]:
    transport = httpx.AsyncHTTPTransport(local_address=GOOD_ADDRESS)
    pings: list[float] = []
    async with httpx.AsyncClient(base_url=url, transport=transport, timeout=120) as client:

        async def ping() -> None:
            while True:
                started = time.perf_counter()
                await client.get("/ping")
                pings.append((time.perf_counter() - started) * 1000)
                await asyncio.sleep(0.1)

        pinger = asyncio.create_task(ping())
        try:
            results = [await good_reply(client) for _ in range(trials)]
        finally:
            pinger.cancel()
            await asyncio.gather(pinger, return_exceptions=True)
    return {
        "first_audio_ms": summary([heard.ttfa_s for heard, _ in results], scale=1000),
        "gap_ms": summary([heard.stall_s for heard, _ in results], scale=1000),
        "gapped": sum(1 for heard, _ in results if heard.gaps),
        "refusals": sum(r for _, r in results),
        "ping_ms": summary(pings),
    }


async def _until(stop: asyncio.Event, work: Callable[[], Awaitable[object]], loops: int) -> list[Any]:
    """``loops`` concurrent loops of ``work`` until ``stop``; what each call returned or raised."""
    seen: list[Any] = []

    async def loop() -> None:
        while not stop.is_set():
            try:
                seen.append(await work())
            except Exception as exc:  # an attack's own failures are part of its outcome
                seen.append(type(exc).__name__)

    await asyncio.gather(*(loop() for _ in range(loops)))
    return seen


def _counts(values: list[Any]) -> dict[str, int]:
    return dict(sorted(Counter(map(str, values)).items()))


async def hostile_texts(server: ServerProcess, stop: asyncio.Event) -> Outcome:
    """Texts of 20,000 hostile characters and absurd fields, as fast as the server answers."""
    bodies = [{"text": t} for t in HOSTILE_TEXTS] + [
        {"text": "Hi.", "voice": "1" * 5_000},
        {"text": "Hi.", "speed": 1e308},
    ]
    index = 0
    async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:

        async def send() -> int:  # the answer's head is enough: the text work is done by then
            nonlocal index
            index += 1
            async with client.stream("POST", "/invocations", json=bodies[index % len(bodies)]) as response:
                return response.status_code

        statuses = await _until(stop, send, loops=2)
    return {"requests": len(statuses), "statuses": _counts(statuses)}


async def idle_appenders(server: ServerProcess, stop: asyncio.Event, count: int = 30) -> Outcome:
    """Sessions that append a few words and never flush (each holds engine slots while it can)."""
    sockets = []
    ended = refused = 0
    started = time.perf_counter()
    for _ in range(count):
        ws = await websockets.connect(server.ws_url, max_size=None)
        await ws.recv()
        await ws.send(json.dumps({"type": "append", "text": "Hello there, this is a reply that"}))
        sockets.append(ws)

    async def listen(ws: Any) -> None:
        nonlocal ended, refused
        with contextlib.suppress(websockets.exceptions.ConnectionClosed):
            async for frame in ws:
                if isinstance(frame, str):
                    kind = json.loads(frame)
                    ended += kind.get("type") == "synthesis_complete"
                    refused += kind.get("code") in ("overloaded", "client_limit")

    listeners = [asyncio.create_task(listen(ws)) for ws in sockets]
    await _hold(stop, float(LIMITS["SPEAKSTREAM_TEXT_IDLE_S"]) + 2 - (time.perf_counter() - started))
    for ws in sockets:
        await ws.close()
    await asyncio.gather(*listeners, return_exceptions=True)
    return {"sessions": count, "ended_by_text_idle": ended, "refused": refused}


async def _hold(stop: asyncio.Event, at_least_s: float, done: asyncio.Event | None = None) -> None:
    """Until the measurement is over and at least ``at_least_s`` have passed (so that the limit
    the attack tests has had time to act); then sets ``done``."""
    await asyncio.gather(stop.wait(), asyncio.sleep(max(0.0, at_least_s)))
    if done is not None:
        done.set()


async def never_reading(server: ServerProcess, stop: asyncio.Event, count: int = 10) -> Outcome:
    """HTTP clients that ask for a long reply and never read it."""
    body = json.dumps({"text": LONG_TEXT * 6}).encode()
    head = f"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    pairs = [await raw_http(server.port, head, body, receive_buffer=4096) for _ in range(count)]
    await _hold(stop, float(LIMITS["SPEAKSTREAM_SEND_TIMEOUT_S"]) + 2)
    answers = []
    for reader, writer in pairs:  # dropped: a 200 whose stream ends before the chunked body's end
        data = b""
        with contextlib.suppress(TimeoutError, ConnectionError):
            async with asyncio.timeout(60):
                while chunk := await reader.read(65_536):
                    data += chunk
                    if data.endswith(b"0\r\n\r\n"):
                        break
        status = data.split(b" ", 2)[1].decode() if data.count(b" ") >= 2 else "closed"
        whole = data.endswith(b"0\r\n\r\n")
        answers.append(f"{status} dropped" if status == "200" and not whole else status)
        writer.close()
    return {"clients": count, "answers": _counts(answers)}


async def slow_bodies(server: ServerProcess, stop: asyncio.Event, count: int = 20) -> Outcome:
    """Bodies that never finish arriving (a byte at a time, slowloris)."""
    head = "POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n"
    pairs = [await raw_http(server.port, head, b'{"text": "') for _ in range(count)]

    async def drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
        while not holding.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.5):
                    line = await reader.readline()
                    return line.decode(errors="replace").split(" ", 2)[1] if line else "closed"
            with contextlib.suppress(ConnectionError):
                writer.write(b"a")
        return "still open"

    holding = asyncio.Event()
    hold = asyncio.create_task(_hold(stop, float(LIMITS["SPEAKSTREAM_BODY_TIMEOUT_S"]) + 2, holding))
    try:
        statuses = await asyncio.gather(*(drip(r, w) for r, w in pairs))  # until ``holding`` is set
    finally:
        hold.cancel()
        await asyncio.gather(hold, return_exceptions=True)
        for _, writer in pairs:
            writer.close()
    return {"senders": count, "answers": _counts(statuses)}


async def handshake_flood(server: ServerProcess, stop: asyncio.Event, count: int = 150) -> Outcome:
    """Many WebSocket handshakes at once, more than ``max_sessions``."""

    async def open_one() -> tuple[str, Any]:
        try:
            ws = await websockets.connect(server.ws_url, max_size=None)
        except Exception as exc:  # refused at the handshake
            return type(exc).__name__, None
        kind = json.loads(await ws.recv()).get("type")
        return ("accepted" if kind == "session_start" else "refused"), ws

    opened = await asyncio.gather(*(open_one() for _ in range(count)))
    await stop.wait()
    for _, ws in opened:
        if ws is not None:
            await ws.close()
    return {"handshakes": count, "answers": _counts([kind for kind, _ in opened])}


async def parallel_flood(server: ServerProcess, stop: asyncio.Event, count: int = 24) -> Outcome:
    """One client (one address) with many long replies in parallel, over and over."""
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(base_url=server.url, timeout=300, limits=limits) as client:

        async def send() -> int:
            async with client.stream("POST", "/invocations", json={"text": LONG_TEXT}) as response:
                async for _ in response.aiter_raw():
                    if stop.is_set():
                        break
                return response.status_code

        statuses = await _until(stop, send, loops=count)
    return {"parallel": count, "statuses": _counts(statuses)}


async def cross_site(server: ServerProcess, stop: asyncio.Event, count: int = 20) -> Outcome:
    """Browser WebSockets from another site (``Origin: https://evil.example``)."""
    answers = []
    for _ in range(count):
        try:
            ws = await websockets.connect(server.ws_url, origin="https://evil.example")  # type: ignore[arg-type]
            answers.append("accepted")
            await ws.close()
        except websockets.exceptions.InvalidStatus as exc:
            answers.append(f"HTTP {exc.response.status_code}")
        except Exception as exc:
            answers.append(type(exc).__name__)
    await stop.wait()
    return {"handshakes": count, "answers": _counts(answers)}


ATTACKS: dict[str, Attack] = {
    "hostile texts": hostile_texts,
    "appends never flushed": idle_appenders,
    "responses never read": never_reading,
    "bodies that never finish": slow_bodies,
    "handshake flood": handshake_flood,
    "one client's parallel flood": parallel_flood,
    "cross-site WebSockets": cross_site,
}


async def _under(server: ServerProcess, attack: Attack, trials: int) -> dict[str, Any]:
    stop = asyncio.Event()
    running = asyncio.create_task(attack(server, stop))
    try:
        await asyncio.sleep(0.5)  # the attack in place
        measured = await _measure(server.url, trials)
    finally:
        stop.set()
    outcome = await running
    await asyncio.sleep(1.0)  # let the server drop what the attack left
    return {**measured, "outcome": outcome}


@contextlib.asynccontextmanager
async def _server(fake_engine: bool) -> AsyncIterator[ServerProcess]:
    args = ["--fake-engine"] if fake_engine else []
    server = await asyncio.to_thread(ServerProcess(*args, env=LIMITS).wait_ready)
    try:
        yield server
    finally:
        server.stop()


async def run_abuse(*, fake_engine: bool = False, trials: int = 8, attacks: list[str] | None = None) -> dict[str, Any]:
    async with _server(fake_engine) as server:
        await _measure(server.url, 2)  # warm-up
        quiet = await _measure(server.url, trials)
        results = {name: await _under(server, ATTACKS[name], trials) for name in attacks or ATTACKS}
    quiet_p95 = quiet["first_audio_ms"]["p95"]
    for result in results.values():
        result["p95_vs_quiet"] = round(result["first_audio_ms"]["p95"] / quiet_p95, 2) if quiet_p95 else None
    return {"engine": "fake" if fake_engine else "Kokoro", "limits": LIMITS, "quiet": quiet, "attacks": results}
