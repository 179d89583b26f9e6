"""The Grafana dashboard in ``deploy/grafana/speakstream.json``, built with Grafana's own
grafana-foundation-sdk (typed builders; the JSON is generated, never typed by hand).

    python scripts/grafana_dashboard.py            # rewrite the JSON
    python scripts/grafana_dashboard.py --check    # exit 1 if the JSON is not what this builds

Panels in the order an operator reads them: is it serving, is first audio fast, do listeners hear
gaps, how close to capacity, what fails. Every query reads metrics a real server exposes
(``tests/scripts/test_grafana_dashboard.py`` checks them against one after a short load).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

from grafana_foundation_sdk.builders.dashboard import Dashboard, DatasourceVariable, Row
from grafana_foundation_sdk.builders.prometheus import Dataquery
from grafana_foundation_sdk.builders.stat import Panel as Stat
from grafana_foundation_sdk.builders.timeseries import Panel as Timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef

OUT = Path(__file__).parents[1] / "deploy" / "grafana" / "speakstream.json"
SOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
RATE = "$__rate_interval"
_ids = itertools.count(1)


def query(expr: str, legend: str = "") -> Dataquery:
    return Dataquery().expr(expr).legend_format(legend or "__auto").datasource(SOURCE)


def series(title: str, unit: str, *queries: Dataquery, description: str = "") -> Timeseries:
    panel = Timeseries().id(next(_ids)).title(title).unit(unit).datasource(SOURCE).height(8).span(12)
    for ref, q in zip("ABCDEFGH", queries, strict=False):
        panel = panel.with_target(q.ref_id(ref))
    return panel.description(description)


def stat(title: str, unit: str, expr: str, description: str = "") -> Stat:
    panel = Stat().id(next(_ids)).title(title).unit(unit).datasource(SOURCE).height(4).span(6)
    return panel.description(description).with_target(query(expr).ref_id("A"))


def row(title: str) -> Row:
    return Row(title).id(next(_ids))


def quantile(q: float, metric: str, by: str) -> str:
    return f"histogram_quantile({q}, sum by (le, {by}) (rate({metric}_bucket[{RATE}])))"


def build() -> Dashboard:
    ttfa = "speakstream_time_to_first_audio_seconds"
    return (
        Dashboard("speakstream")
        .uid("speakstream")
        .tags(["speakstream", "tts"])
        .refresh("30s")
        .time("now-1h", "now")
        .with_variable(DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
        .with_row(row("Serving"))
        .with_panel(stat("Replicas ready", "none", "sum(speakstream_ready)", "Replicas whose /ping is 200"))
        .with_panel(stat("Open sessions", "none", "sum(speakstream_active_sessions)"))
        .with_panel(stat("Utilization (max)", "percentunit", "max(speakstream_utilization)", "Load over capacity"))
        .with_panel(
            stat(
                "Cache hit ratio",
                "percentunit",
                f"sum(rate(speakstream_cache_hits_total[{RATE}])) / clamp_min(sum(rate(speakstream_cache_hits_total"
                f"[{RATE}])) + sum(rate(speakstream_cache_misses_total[{RATE}])), 1e-9)",
            )
        )
        .with_row(row("What listeners hear"))
        .with_panel(
            series(
                "First audio by route",
                "s",
                query(quantile(0.5, ttfa, "transport"), "p50 {{transport}}"),
                query(quantile(0.95, ttfa, "transport"), "p95 {{transport}}"),
                description="Request received to first audio byte, by route and dialect",
            )
        )
        .with_panel(
            series(
                "Gaps after first audio",
                "short",
                query(f"sum(rate(speakstream_gaps_total[{RATE}]))", "gaps a second"),
                query(
                    f"sum(rate(speakstream_gaps_total[{RATE}]))"
                    f" / clamp_min(sum(rate(speakstream_requests_total[{RATE}])), 1e-9)",
                    "gaps a reply",
                ),
                query(f"sum(rate(speakstream_gap_seconds_total[{RATE}]))", "gap seconds a second"),
                description="A listener playing in real time ran dry while the server had its next text",
            )
        )
        .with_row(row("Capacity"))
        .with_panel(
            series(
                "Capacity vs load",
                "short",
                query("sum(speakstream_capacity_audio_seconds_per_second)", "capacity (audio s / s)"),
                query("sum(speakstream_load_audio_seconds_per_second)", "load (audio s / s)"),
                query(f"sum(rate(speakstream_admission_refused_total[{RATE}]))", "refused a second"),
                description="Audio seconds a second the replicas make and the admitted replies ask for",
            )
        )
        .with_panel(
            series(
                "Real-time factor",
                "short",
                query(quantile(0.5, "speakstream_real_time_factor", "instance"), "p50 {{instance}}"),
                query(quantile(0.95, "speakstream_real_time_factor", "instance"), "p95 {{instance}}"),
                description="Engine seconds per audio second of each piece (over 1: slower than real time)",
            )
        )
        .with_panel(
            series(
                "Queue",
                "short",
                query("sum(speakstream_queued_chunks)", "chunks queued"),
                query(quantile(0.95, "speakstream_queue_wait_seconds", "instance"), "p95 wait {{instance}} (s)"),
            )
        )
        .with_panel(
            series(
                "Requests by route",
                "reqps",
                query(f"sum by (transport) (rate(speakstream_requests_total[{RATE}]))", "{{transport}}"),
            )
        )
        .with_row(row("Errors"))
        .with_panel(
            series(
                "Errors by code",
                "reqps",
                query(f"sum by (code) (rate(speakstream_errors_total[{RATE}]))", "{{code}}"),
                description="Errors sent to clients; overloaded is a capacity refusal, retryable",
            )
        )
    )


def rendered() -> str:
    return JSONEncoder(sort_keys=True, indent=2).encode(build().build()) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the JSON is stale")
    args = parser.parse_args()
    text = rendered()
    json.loads(text)
    if args.check:
        same = OUT.exists() and OUT.read_text() == text
        print("up to date" if same else f"{OUT} is stale: run python scripts/grafana_dashboard.py")
        return 0 if same else 1
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
