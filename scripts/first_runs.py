"""Whether a session's first runs are slower than its later ones: a fresh engine, its copies run
``--warm`` times on an opening's frames (``SplitModel.warm``) or not at all, then a 16- and a
40-frame window timed twice each on every copy of both decoders.

    for runs in 0 1 2 0 1 2; do python scripts/first_runs.py --warm $runs; done

Each call is a fresh process, so each copy's first window is its first run after the warm-up.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from speakstream.engine.kokoro import WARM_TOKENS, KokoroEngine
from speakstream.engine.model.feeds import decoder_feed, front_feed

TEXT = "Hello there, this is a reasonably long sentence to try every copy of the model."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warm", type=int, default=0, help="runs of each copy before timing (0: none)")
    args = parser.parse_args()
    engine = KokoroEngine()
    assert engine.runner is not None
    model = engine.runner.model
    assert model.crowded is not None
    if args.warm:
        model.warm(WARM_TOKENS, engine.voice_bank.style("af_heart", len(WARM_TOKENS)), args.warm)
    tokens = engine.phoneme_windows(TEXT, engine.check_voice("af_heart").speaks)[0].tokens
    style = engine.voice_bank.style("af_heart", len(tokens))
    front = model.front.every[0].run(None, front_feed(tokens, style, 1.0))[1:]
    phase = np.zeros((1, 1, len(model.harmonics)), np.float32)
    decoders = {"mixed": model.decoder, "int8": model.crowded}
    for name, copies in decoders.items():
        for i, copy in enumerate(copies.every):
            times = []
            for frames in (16, 16, 40, 40):
                feed = decoder_feed(front, style, phase, 10, 10 + frames)
                started = time.perf_counter()
                copy.run(["audio"], feed)
                times.append(f"{frames}:{1000 * (time.perf_counter() - started):.0f}")
            where = "wide" if i == 0 else f"narrow {i}"
            print(f"warmed {args.warm}: {name} {where}: ms by frames {' '.join(times)}", flush=True)


if __name__ == "__main__":
    main()
