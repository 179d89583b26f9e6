"""Faults: a failing engine, a client that stops reading, clients vanishing by the hundred, and
SIGTERM mid-reply; each must leave the server (and the other sessions) as it was."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import websockets

from speakstream.bench.process import ServerProcess
from speakstream.client import SpeechSession
from speakstream.data import replies
from speakstream.engine.fake import FakeEngine
from speakstream.loadtest.servers import fake_server, own_fds, own_rss_mb, settled

REPLY = replies()["long"]["text"]


async def engine_failure() -> dict[str, Any]:
    server = fake_server(FakeEngine(seconds_per_char=0.001, fail_when=lambda text: "FAIL" in text))
    try:
        async with SpeechSession(server.ws_url) as victim, SpeechSession(server.ws_url) as bystander:
            other = await bystander.speak(REPLY)
            failed = await victim.collect(await victim.speak("This sentence will FAIL in the engine. And go on."))
            after = await victim.collect(await victim.speak("The session still works."))
            other_result = await bystander.collect(other)
    finally:
        server.stop()
    final = failed.final or {}
    return {
        "error_frame": f"{final.get('code')} (retryable={final.get('retryable')})",
        "same_session_continues": (after.final or {}).get("type") == "synthesis_complete",
        "other_session_unaffected": (other_result.final or {}).get("type") == "synthesis_complete",
    }


async def slow_reader(send_timeout_s: float = 1.0) -> dict[str, Any]:
    server = fake_server(FakeEngine(seconds_per_char=0.0), send_timeout_s=send_timeout_s)
    try:
        rss_before = own_rss_mb()
        stuck = await websockets.connect(server.ws_url, max_queue=1, max_size=None)
        await stuck.recv()
        await stuck.send(json.dumps({"type": "text", "text": REPLY * 12}))
        started = time.perf_counter()
        async with SpeechSession(server.ws_url) as healthy:
            ok = await healthy.collect(await healthy.speak("I am still served."))
        left = await settled(server, 10_000, timeout=30)
        dropped_after = time.perf_counter() - started
        rss_growth = own_rss_mb() - rss_before
        stuck.transport.abort()
    finally:
        server.stop()
    return {
        "dropped": left["sessions"] == 0,
        "dropped_after_s": round(dropped_after, 2),
        "send_timeout_s": send_timeout_s,
        "others_unaffected": (ok.final or {}).get("type") == "synthesis_complete",
        "memory_growth_mb": round(rss_growth, 1),
    }


async def vanishing_clients(count: int = 100) -> dict[str, Any]:
    server = fake_server(FakeEngine(seconds_per_char=0.002))
    try:
        async with SpeechSession(server.ws_url) as warm:
            await warm.collect(await warm.speak("Warm up."))
        before = await settled(server, 10_000)
        fds, rss = own_fds(), own_rss_mb()
        for _ in range(count):
            ws = await websockets.connect(server.ws_url)
            await ws.recv()
            await ws.send(json.dumps({"type": "text", "text": REPLY}))
            await ws.recv()
            ws.transport.abort()
        after = await settled(server, before["tasks"])
        return {
            "clients": count,
            "tasks": f"{before['tasks']} -> {after['tasks']}",
            "sessions_after": after["sessions"],
            "queued_after": after["queued"],
            "fds": f"{fds} -> {own_fds()}",
            "rss_mb": f"{rss:.0f} -> {own_rss_mb():.0f}",
            "clean": after["tasks"] <= before["tasks"] and after["sessions"] == 0 and after["queued"] == 0,
        }
    finally:
        server.stop()


async def sigterm_mid_reply(grace_s: float = 5.0) -> dict[str, Any]:
    server = ServerProcess("--fake-engine", env={"SPEAKSTREAM_GRACE_S": str(grace_s)}).wait_ready()
    frames: list[Any] = []
    try:
        async with websockets.connect(server.ws_url, max_size=None) as ws:
            await ws.recv()
            await ws.send(json.dumps({"type": "text", "text": REPLY * 3}))
            while not isinstance(frame := await ws.recv(), bytes):
                pass
            exit_task = asyncio.create_task(asyncio.to_thread(server.terminate, 60.0))
            try:
                async for frame in ws:
                    if isinstance(frame, str):
                        frames.append(json.loads(frame))
            except websockets.exceptions.ConnectionClosed:
                pass
            close = (ws.close_code, ws.close_reason)
            code, seconds = await exit_task
    finally:
        server.stop()
    shutdown = [f for f in frames if f.get("code") == "server_shutdown"]
    return {
        "error_frame": bool(shutdown),
        "close_code": close[0],
        "close_reason": close[1],
        "exit_code": code,
        "exit_s": round(seconds, 2),
        "grace_s": grace_s,
    }


async def run_faults(*, vanishing: int = 100) -> dict[str, Any]:
    return {
        "engine_failure": await engine_failure(),
        "slow_reader": await slow_reader(),
        "vanishing_clients": await vanishing_clients(vanishing),
        "sigterm": await sigterm_mid_reply(),
    }
