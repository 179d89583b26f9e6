"""What pronunciation rules cost a request: 5,001 random rules over a 20,000-character text, whole
and streamed in 4-character fragments (the server's text limit, an LLM's smallest deltas).

    python scripts/lexicon_speed.py

Prints, for case-sensitive and case-insensitive rules, the time to build the lexicon, to apply
it to the whole text, and to stream the text through a ``Rewriter``; the two outputs must agree.
"""

from __future__ import annotations

import argparse
import random
import string
import time

from speakstream.text.lexicon import Lexicon, Rule

TEXT = ("Thanks for waiting, I found your booking. Your flight leaves at nine forty. " * 270)[:20_000]


def main() -> None:
    draw = random.Random(1)
    words = sorted({"".join(draw.choices(string.ascii_lowercase, k=draw.randint(4, 10))) for _ in range(5_000)})
    for case_sensitive in (True, False):
        rules = [Rule(string=w, alias="x", case_sensitive=case_sensitive) for w in words]
        rules.append(Rule(string="booking", alias="reservation", case_sensitive=case_sensitive))
        started = time.perf_counter()
        lexicon = Lexicon(rules)
        built = time.perf_counter() - started
        started = time.perf_counter()
        whole = lexicon.apply(TEXT)
        applied = time.perf_counter() - started
        rewriter = lexicon.rewriter()
        started = time.perf_counter()
        streamed = "".join(rewriter.feed(TEXT[i : i + 4]) for i in range(0, len(TEXT), 4)) + rewriter.flush()
        fed = time.perf_counter() - started
        assert streamed == whole and "reservation" in whole
        print(
            f"case_sensitive={case_sensitive}: {len(rules):,} rules built in {built * 1000:.0f} ms; "
            f"{len(TEXT):,} characters whole {applied * 1000:.0f} ms, "
            f"as {len(TEXT) // 4:,} fragments of 4 {fed * 1000:.0f} ms"
        )


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
