"""The Reliability table (docs/reliability.md) from one ``speakstream loadtest`` run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from speakstream.bench.tables import table

START, END = "<!-- reliability:start -->", "<!-- reliability:end -->"


def _heard(level: dict[str, Any]) -> str:
    """The gaps the admitted listeners heard, and the replies refused or delayed for capacity
    (runs before these were counted: nothing)."""
    if "gaps" not in level:
        return ""
    return (
        f"gaps {level['gaps']} ({level['gap_ms_per_session']} ms a reply), "
        f"refused for capacity {level['refused']}, delayed {level['delayed']}, "
    )


def rows(run: dict[str, Any], command: str) -> list[list[Any]]:
    """A row (what, figures, the command) for each result of each suite that ran, in suite order."""
    out: list[list[Any]] = []
    for suite, made in _ROWS.items():
        if suite in run["suites"]:
            out += made(run["suites"][suite], run, command)
    return out


def _load_rows(levels: list[dict[str, Any]], run: dict[str, Any], command: str) -> list[list[Any]]:
    out = []
    for level in levels:
        t = level["ttfa_ms"]
        out.append(
            [
                f"load: {level['sessions']} sessions at once ({run['engine']} engine)",
                f"held {level['held']}/{level['sessions']}, p95 first audio {t.get('p95')} ms, "
                f"{level.get('audio_per_wall', '?')} audio s per wall s, "
                + _heard(level)
                + f"errors {level['errors']}, audio of another session {level['foreign']}",
                f"`{command} load`",
            ]
        )
    return out


def _overload_rows(o: dict[str, Any], run: dict[str, Any], command: str) -> list[list[Any]]:
    limits = o["limits"]
    return [
        [
            f"overload: sessions over max_sessions={limits['max_sessions']}, requests over queue_depth="
            f"{limits['queue_depth']}",
            f"sessions refused {o['refused']} in p95 {o['refusal_ms'].get('p95')} ms as "
            f"{', '.join(o['refusal_codes'])}; HTTP 503 + Retry-After {o['http_503_with_retry_after']} of "
            f"{o['http_attempts']} simultaneous requests, answered in p95 {o['http_503_ms'].get('p95')} ms; "
            f"admitted sessions' p95 first audio {o['admitted_ttfa_ms_quiet'].get('p95')} ms quiet vs "
            f"{o['admitted_ttfa_ms_under_pressure'].get('p95')} ms under pressure; recovered: {o['recovered']}",
            f"`{command} overload`",
        ]
    ]


def _fault_rows(f: dict[str, Any], run: dict[str, Any], command: str) -> list[list[Any]]:
    e, s, v, t = f["engine_failure"], f["slow_reader"], f["vanishing_clients"], f["sigterm"]
    return [
        [
            "fault: engine raises mid-synthesis",
            f"error frame {e['error_frame']}; same session continues: "
            f"{e['same_session_continues']}; other session unaffected: {e['other_session_unaffected']}",
            f"`{command} faults`",
        ],
        [
            "fault: client stops reading",
            f"dropped after {s['dropped_after_s']} s (send timeout {s['send_timeout_s']} s); "
            f"others unaffected: {s['others_unaffected']}; memory growth {s['memory_growth_mb']} MB",
            f"`{command} faults`",
        ],
        [
            f"fault: {v['clients']} clients vanish mid-stream",
            f"tasks {v['tasks']}, sessions left {v['sessions_after']}, "
            f"queued {v['queued_after']}, fds {v['fds']}, RSS MB {v['rss_mb']}",
            f"`{command} faults`",
        ],
        [
            "fault: SIGTERM mid-reply",
            f"error frame server_shutdown: {t['error_frame']}; close {t['close_code']} "
            f'"{t["close_reason"]}"; process gone {t["exit_s"]} s after the signal (grace {t["grace_s"]} s; exit '
            f"status {t['exit_code']}: uvicorn re-raises SIGTERM once its graceful shutdown is done)",
            f"`{command} faults`",
        ],
    ]


def _soak_rows(k: dict[str, Any], run: dict[str, Any], command: str) -> list[list[Any]]:
    out = []
    for name, what in (("messages", "messages on one session"), ("sessions", "sessions opened and closed")):
        r = k[name]
        out.append(
            [
                f"soak: {r['count']} {what}",
                f"RSS {r['before']['rss_mb']} -> {r['after']['rss_mb']} MB, "
                f"fds {r['before']['fds']} -> {r['after']['fds']}; flat (< {k['bounds']['rss_mb']} MB, "
                f"<= {k['bounds']['fds']} fds): {r['flat']}",
                f"`{command} soak`",
            ]
        )
    return out


def _fuzz_rows(z: dict[str, Any], run: dict[str, Any], command: str) -> list[list[Any]]:
    return [
        [
            "hostile input on a live session",
            f"{z['bad_inputs']}; {z['random_frames']} random frames (bytes, text, JSON) answered with "
            f"{sum(z['error_codes'].values())} error frames, hangs {z['frame_hangs']}; "
            f"{z['http']['bodies']} random HTTP bodies: {z['http']['statuses']}, crashes {z['http']['crashes']}, "
            f"hangs {z['http']['hangs']}; session usable after: {z['session_usable_after']}; "
            f"server healthy: {z['server_healthy_after']}",
            f"`{command} fuzz`",
        ]
    ]


def _gaps(result: dict[str, Any]) -> str:
    """The well-behaved client's gaps: how many of its replies had one, and their total's p95."""
    gaps = result.get("gap_ms", {})
    return f"gaps in {result.get('gapped', 0)} of {gaps.get('n', 0)} replies (p95 {gaps.get('p95', 0)} ms)"


def _abuse_rows(abuse: dict[str, Any], run: dict[str, Any], command: str) -> list[list[Any]]:
    quiet = abuse["quiet"]
    rows = [
        [
            f"abuse: quiet ({abuse['engine']} engine), a well-behaved client from another address",
            f"p95 first audio {quiet['first_audio_ms'].get('p95')} ms, {_gaps(quiet)}, "
            f"/ping p95 {quiet['ping_ms'].get('p95')} ms",
            f"`{command} abuse`",
        ]
    ]
    for name, result in abuse["attacks"].items():
        outcome = ", ".join(f"{key} {value}" for key, value in result["outcome"].items())
        rows.append(
            [
                f"abuse: {name}",
                f"{outcome}; the well-behaved client's p95 first audio {result['first_audio_ms'].get('p95')} ms "
                f"({result['p95_vs_quiet']}x quiet), {_gaps(result)}, refused {result['refusals']} times; "
                f"/ping p95 {result['ping_ms'].get('p95')} ms",
                f"`{command} abuse`",
            ]
        )
    return rows


def render(run: dict[str, Any], command: str) -> str:
    head = (
        f"Measured with `{command}` ({'--quick, ' if run['quick'] else ''}{run['date']}, {run['machine']}). "
        "The same suites run in CI in a bounded form (`make test`) and in full with `make test-full`.\n\n"
    )
    return head + table(["what was tried", "result", "command"], rows(run, command))


_ROWS: dict[str, Callable[[Any, dict[str, Any], str], list[list[Any]]]] = {
    "load": _load_rows,
    "overload": _overload_rows,
    "faults": _fault_rows,
    "soak": _soak_rows,
    "fuzz": _fuzz_rows,
    "abuse": _abuse_rows,
}
"""Each suite's rows, in the order the report shows them."""
