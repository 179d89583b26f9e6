"""Scale-out on Ray Serve, measured with the CLI a user would run.

    python scripts/ray_scaleout.py --out docs/bench/scaleout

For 1 and then 2 replicas (one inference thread each): ``speakstream serve --ray`` on a local Ray
cluster, then the same ``speakstream loadtest load --url`` against it. Then, on the 2 replicas,
one replica is killed (SIGKILL) while sessions speak: what those sessions saw, whether the others
noticed, and how long Serve took to bring a replacement up. Writes ``report.md`` and
``scaleout.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from speakstream.bench.process import free_port
from speakstream.client import Backoff, Reconnect, SpeechSession
from speakstream.data import replies

BIN = Path(sys.executable).parent
REPLICA = "ServeReplica:speakstream"


def replica_pids() -> list[int]:
    out = subprocess.run(["pgrep", "-f", REPLICA], capture_output=True, text=True).stdout
    return sorted(int(p) for p in out.split())


class RayServer:
    """``speakstream serve --ray --replicas N`` in a subprocess, until ``stop``."""

    def __init__(self, replicas: int, port: int) -> None:
        self.port = port
        env = {**os.environ, "SPEAKSTREAM_INTRA_OP_THREADS": "1", "SPEAKSTREAM_LANES": "1"}
        command = [str(BIN / "speakstream"), "serve", "--ray", "--replicas", str(replicas), "--replica-cpus", "1"]
        command += ["--port", str(port), "--max-sessions", "64"]
        self.log = open(f"/tmp/ray-serve-{replicas}.log", "w")  # noqa: SIM115  (closed in stop)
        self.started = time.perf_counter()
        self.process = subprocess.Popen(command, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.ready_s = self._wait_ready(replicas)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _wait_ready(self, replicas: int, timeout_s: float = 600.0) -> float:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited ({self.process.returncode}); see {self.log.name}")
            try:
                if httpx.get(f"{self.url}/ping", timeout=2).status_code == 200 and len(replica_pids()) >= replicas:
                    return time.perf_counter() - self.started
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError("the Ray server did not become ready")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()
        subprocess.run([str(BIN / "ray"), "stop", "--force"], capture_output=True)


def load(url: str, out: Path, sessions: int, turns: int, reply: str, ramp: float) -> dict[str, Any]:
    command = [str(BIN / "speakstream"), "loadtest", "load", "--url", url, "--sessions", str(sessions)]
    command += ["--turns", str(turns), "--reply", reply, "--ramp", str(ramp), "--json", str(out)]
    subprocess.run(command, check=True, capture_output=True)
    level: dict[str, Any] = json.loads(out.read_text())["suites"]["load"][0]
    return level


async def kill_one(url: str, sessions: int, seconds: float, ramp: float) -> dict[str, Any]:
    """Sessions speak in a loop; a replica is killed after a few seconds. Per session: replies
    done, errors, reconnects, and (for those that reconnected) the time from the kill to the
    first reply completed after it."""
    text = replies()["weather"]["text"]
    ws_url = url.replace("http", "ws", 1) + "/invocations-bidirectional-stream"
    kill_at: list[float] = []

    async def speaker(index: int) -> dict[str, Any]:
        heard: list[Reconnect] = []
        done: list[float] = []
        errors: list[str] = []
        backoff = Backoff(attempts=10, first_s=0.2, max_s=2.0)
        await asyncio.sleep(index * ramp)
        async with SpeechSession(ws_url, reconnect=backoff, on_reconnect=heard.append) as session:
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                try:
                    result = await session.say(text)
                    assert result.final is not None and result.final["audio_bytes"] == len(result.audio)
                    done.append(time.perf_counter())
                except Exception as exc:
                    errors.append(getattr(exc, "code", type(exc).__name__))
        after = [t - kill_at[0] for t in done if kill_at and t > kill_at[0]]
        return {
            "replies": len(done),
            "errors": errors,
            "reconnects": [{"code": r.code, "reason": r.reason, "attempt": r.attempt} for r in heard],
            "first_reply_after_kill_s": round(min(after), 2) if after and heard else None,
        }

    async def killer() -> dict[str, Any]:
        await asyncio.sleep(6.0 + sessions * ramp)
        before = replica_pids()
        victim = before[0]
        kill_at.append(time.perf_counter())
        os.kill(victim, signal.SIGKILL)
        instances = set()
        async with httpx.AsyncClient(timeout=5) as client:
            for _ in range(20):
                instances.add((await client.get(f"{url}/ping")).json().get("instance"))
            replaced_at = None
            while replaced_at is None and time.perf_counter() - kill_at[0] < 300:
                instance = (await client.get(f"{url}/ping")).json().get("instance")
                if instance not in instances and len(replica_pids()) == len(before):
                    replaced_at = time.perf_counter()
                await asyncio.sleep(0.25)
        return {"victim": victim, "replaced_s": None if replaced_at is None else round(replaced_at - kill_at[0], 1)}

    results = await asyncio.gather(killer(), *(speaker(i) for i in range(sessions)))
    return {"kill": results[0], "sessions": results[1:]}


def report(result: dict[str, Any]) -> str:
    lines = [
        "## Scale-out on Ray Serve",
        "",
        f"Command: `python scripts/ray_scaleout.py --out docs/bench/scaleout` ({result['date']}, {result['machine']}).",
        f"Load: `speakstream loadtest load --url ... --sessions {result['sessions']} --turns {result['turns']} "
        f"--reply {result['reply']} --ramp {result['ramp']}` (a session starts every {result['ramp']} s, as callers "
        "arrive) against `speakstream serve --ray --replicas N --replica-cpus 1`, one inference thread per replica.",
        "",
        "| replicas | audio s per wall s | p50 first audio ms | p95 first audio ms | errors | audio of another session"
        " | ready after s |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, level in result["load"].items():
        t = level["ttfa_ms"]
        lines.append(
            f"| {n} | {level['audio_per_wall']} | {t.get('p50')} | {t.get('p95')} | {level['errors']} | "
            f"{level['foreign']} | {result['ready_s'][n]} |"
        )
    lines += ["", f"Throughput, 2 replicas vs 1: **{result['speedup']}x**.", ""]
    kill = result["kill"]
    hit = [s for s in kill["sessions"] if s["reconnects"]]
    spared = [s for s in kill["sessions"] if not s["reconnects"]]
    lines += [
        "A replica killed mid-reply (SIGKILL, 2 replicas):",
        "",
        f"{len(kill['sessions'])} sessions speak the same reply in a loop; one replica process is killed once all "
        "have begun.",
        "",
        f"- Sessions on the killed replica: {len(hit)}. Close seen: "
        f"{sorted({(r['code'], r['reason']) for s in hit for r in s['reconnects']})} (the proxy's close for a "
        "replica that died under the session). Each reconnected at once (to the surviving replica: the "
        "replacement was not up yet) and `say()` spoke the lost reply again from its start; those replies ended "
        f"{[s['first_reply_after_kill_s'] for s in hit]} s after the kill, with all sessions now sharing one "
        "replica.",
        f"- Sessions on the other replica: {len(spared)}, errors {sum(len(s['errors']) for s in spared)}, "
        "reconnects 0.",
        f"- Errors reaching the caller, all sessions: {sum(len(s['errors']) for s in kill['sessions'])}.",
        f"- Serve's replacement replica answering `/ping`: {kill['kill']['replaced_s']} s after the kill.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench-out/scaleout"))
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--reply", default="weather")
    parser.add_argument("--ramp", type=float, default=1.0, help="seconds between session starts")
    parser.add_argument("--kill-seconds", type=float, default=40.0)
    parser.add_argument("--readme", type=Path, help="also replace the scale-out part of docs/reliability.md")
    parser.add_argument("--render-only", action="store_true", help="write the report from --out's scaleout.json")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.render_only:
        return publish(json.loads((args.out / "scaleout.json").read_text()), args)
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{os.uname().machine}, {os.cpu_count()} cores",
        "sessions": args.sessions,
        "turns": args.turns,
        "reply": args.reply,
        "ramp": args.ramp,
        "load": {},
        "ready_s": {},
    }
    for replicas in (1, 2):
        server = RayServer(replicas, free_port())
        try:
            result["ready_s"][replicas] = round(server.ready_s, 1)
            out = args.out / f"load-{replicas}.json"
            result["load"][replicas] = load(server.url, out, args.sessions, args.turns, args.reply, args.ramp)
            print(f"{replicas} replica(s): {result['load'][replicas]}", flush=True)
            if replicas == 2:
                result["kill"] = asyncio.run(kill_one(server.url, args.sessions, args.kill_seconds, args.ramp))
                print(f"kill: {result['kill']}", flush=True)
        finally:
            server.stop()
    result["speedup"] = round(result["load"][2]["audio_per_wall"] / result["load"][1]["audio_per_wall"], 2)
    (args.out / "scaleout.json").write_text(json.dumps(result, indent=2) + "\n")
    return publish(result, args)


def publish(result: dict[str, Any], args: argparse.Namespace) -> int:
    text = report(result)
    (args.out / "report.md").write_text(text)
    if args.readme:
        from speakstream.bench.report import update_readme

        update_readme(args.readme, text, start="<!-- scaleout:start -->", end="<!-- scaleout:end -->")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
