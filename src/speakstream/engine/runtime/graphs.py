"""Kokoro as two graphs, front and decoder, each loaded as copies on the engine's cores and warmed
before traffic. Running them is the front's and the runner's work, not this module's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from speakstream.engine.config import pick_crowded_decoder, pick_decoder
from speakstream.engine.model.assets import Assets
from speakstream.engine.model.feeds import decoder_feed, front_feed
from speakstream.engine.model.weights import Placement, place, release_memory, share_arena, shrink_after
from speakstream.engine.runtime.cores import Copies, Cores

WARM_RUNS = 1
"""Runs of each copy before serving, by default: with one shared arena a copy's first run takes
what its later ones take (``docs/design.md``), so one run proves each copy runs."""
WARM_FRAMES = 24
"""Frames each decoder copy is warmed on: an opening with its context (what the first burst of
replies runs on the narrow copies); a whole reply costs seconds of start-up for no faster window."""
CPU = ["CPUExecutionProvider"]
UNSHARED = Placement(None, "unshared", "not asked for (a GPU, or share_weights off)")


def part_sources(assets: Assets, decoder: str, crowded_decoder: str | None) -> dict[str, Path]:
    """The graph files of the front, ``decoder`` and ``crowded_decoder`` (None: none), by part."""
    names = {"front": assets.split("front"), decoder: assets.decoder(decoder)}
    if crowded_decoder is not None:
        names[crowded_decoder] = assets.decoder(crowded_decoder)
    return names


def build_shared(assets: Assets) -> bool:
    """Make the shared weights of a CPU server's default parts beside ``assets`` for this CPU, as
    an image's build does, so a server started from them makes nothing (True: made now)."""
    decoder = pick_decoder("auto", CPU)
    names = part_sources(assets, decoder, pick_crowded_decoder("auto", decoder))
    return place(assets.derived_dir, names).source == "built"


class SplitModel:
    """The front, the decoder and the crowded decoder, each a wide copy (every core) and narrow
    copies (a share of the cores each) on one ``Cores``."""

    def __init__(
        self,
        cores: Cores,
        front: Copies,
        decoder: Copies,
        crowded: Copies | None = None,
        *,
        harmonics: NDArray[np.float64],
        rate: float,
        providers: list[str],
        crowded_decoder_name: str | None = None,
        placement: Placement = UNSHARED,
    ) -> None:
        self.cores, self.front, self.decoder = cores, front, decoder
        self.crowded = crowded
        """The decoder of a crowded opening (None: ``decoder``)."""
        self.crowded_decoder_name = crowded_decoder_name
        self.weights = placement.weights
        """The weights every session reads in place (held as long as the sessions are)."""
        self.placement = placement
        """Where ``weights`` came from (``model.weights.Placement``)."""
        self.harmonics, self.rate, self.providers = harmonics, rate, providers
        self.narrow_count = len(decoder.every) - 1
        self.warmed = False
        """Every copy has been run before serving (``warm``)."""

    @classmethod
    def load(
        cls,
        assets: Assets,
        options: Callable[[], Any],
        providers: list[str],
        *,
        narrow: tuple[Callable[[], Any], int] | None = None,
        decoder: str = "mixed",
        crowded_decoder: str | None = None,
        share_weights: bool = True,
        caches: Sequence[Path] = (),
    ) -> SplitModel:
        """The parts from ``assets``. ``options``: fresh session options for a wide copy;
        ``narrow``: (the same for a copy with a share of the cores, how many copies); ``decoder``:
        which decoder part (``Assets.decoder``); ``crowded_decoder``: the part for a crowded
        opening (None: none beside ``decoder``). ``share_weights`` (on a CPU): every copy of every
        part reads one set of weights and one activation arena (``weights``), found beside the
        assets or in ``caches``, else made in the first of them that can be written."""
        import onnxruntime as ort

        narrow_options, count = narrow or (options, 0)
        cores = Cores()
        names = part_sources(assets, decoder, crowded_decoder)
        on_cpu = providers[0] == "CPUExecutionProvider"
        placement = place(assets.derived_dir, names, caches) if share_weights and on_cpu else UNSHARED
        shared = placement.weights
        if shared is not None:
            share_arena()
            release_memory()

        def copies(part: str) -> Copies:
            def session(part_options: Any, *, wide: bool = False) -> Any:
                if shared is None:
                    return ort.InferenceSession(str(names[part]), part_options, providers=providers)
                prepack = wide and part != crowded_decoder  # a reply alone: its first audio waits on these
                return shared.session(part, part_options, providers, prepack=prepack)

            return cores.copies(session(options(), wide=True), [session(narrow_options()) for _ in range(count)])

        main = copies(decoder)
        meta = main.wide.get_modelmeta().custom_metadata_map
        return cls(
            cores,
            copies("front"),
            main,
            None if crowded_decoder is None else copies(crowded_decoder),
            harmonics=np.array([float(h) for h in meta["sine_harmonics"].split(",")]),
            rate=float(meta["sine_rate"]),
            providers=main.wide.get_providers(),
            crowded_decoder_name=crowded_decoder,
            placement=placement,
        )

    @property
    def on_cpu(self) -> bool:
        return self.providers[0] == "CPUExecutionProvider"

    @property
    def pairs_possible(self) -> bool:
        """Two narrow decoder copies or more (not on a GPU, nor with one lane)."""
        return self.narrow_count >= 2

    def decoders(self, name: str) -> Copies:
        """The copies of decoder ``name`` (``main`` or ``crowded``; ``main`` when there is no other)."""
        return self.crowded if name == "crowded" and self.crowded is not None else self.decoder

    def warm(
        self,
        tokens: tuple[int, ...],
        style: NDArray[np.float32],
        runs: int = WARM_RUNS,
        frames: int | None = WARM_FRAMES,
    ) -> None:
        """Run every copy of every part ``runs`` times, the front on ``tokens`` and the decoders on
        its first ``frames`` frames (None: all), the narrow copies at once as they serve. Once per
        model: a server started again on the same engine finds it warm."""
        if self.warmed:
            return
        self.warmed = True
        phase = np.zeros((1, 1, len(self.harmonics)), np.float32)
        decoders = [self.decoder, *([self.crowded] if self.crowded else [])]
        with ThreadPoolExecutor(max(1, self.narrow_count), thread_name_prefix="speakstream-warm") as pool:
            for _ in range(runs):
                _, features, f0, energy = _each(pool, self.front, None, front_feed(tokens, style, 1.0))
                feed = decoder_feed((features, f0, energy), style, phase, 0, frames)
                for copies in decoders:
                    _each(pool, copies, ["audio"], feed)


def _each(pool: ThreadPoolExecutor, copies: Copies, outputs: list[str] | None, feed: Any) -> Any:
    """Every copy of a part run on ``feed``: the wide one, then the narrow ones at once; the wide
    one's outputs."""
    import onnxruntime as ort

    options = ort.RunOptions()
    shrink_after(options)
    wide, *narrow = copies.every
    outputs_of = wide.run(outputs, feed, options)
    for _ in pool.map(lambda copy: copy.run(outputs, feed, options), narrow):
        pass
    return outputs_of
