import numpy as np
import pytest

from speakstream.engine.voices import VoiceBank, voice_info
from speakstream.errors import UnknownVoice


def bank() -> VoiceBank:
    return VoiceBank(
        {
            "af_heart": np.ones((510, 256), np.float32),
            "af_bella": np.zeros((510, 256), np.float32),
            "bm_george": np.full((510, 256), 2.0, np.float32),
        }
    )


def test_blend_is_the_normalised_weighted_mean() -> None:
    style = bank().style("af_heart:3,af_bella:1", tokens=10)
    assert style.shape == (1, 256)
    assert np.allclose(style, 0.75)


def test_style_row_follows_token_count() -> None:
    voices = {"af_heart": np.arange(510, dtype=np.float32)[:, None].repeat(256, axis=1)}
    voice_bank = VoiceBank(voices)
    assert voice_bank.style("af_heart", 1)[0, 0] == 0
    assert voice_bank.style("af_heart", 100)[0, 0] == 99
    assert voice_bank.style("af_heart", 10_000)[0, 0] == 509


@pytest.mark.parametrize(
    "spec", ["", "nobody", "af_heart:x", "af_heart:0", "af_heart,,af_bella", "../etc/passwd", "af_heart;rm"]
)
def test_bad_specs(spec: str) -> None:
    with pytest.raises(UnknownVoice):
        bank().style(spec, 5)


def test_catalogue() -> None:
    info = voice_info("bm_george")
    assert (info.language, info.gender, info.british) == ("en-gb", "male", True)
    assert voice_info("zf_xiaobei").language == "zh"
    assert bank().info("af_bella:1,bm_george:2").name == "bm_george"


def test_an_unknown_voice_is_named_with_the_closest_ones() -> None:
    """A newcomer's ``nobody`` or ``heart`` or ``af_hart`` is told which voices come closest."""
    for spec, close in (("af_hart", "af_heart"), ("heart", "af_heart"), ("af_heart:0.5,bela", "af_bella")):
        with pytest.raises(UnknownVoice) as caught:
            bank().parse(spec)
        assert close in caught.value.message and "speakstream voices" in caught.value.message
    with pytest.raises(UnknownVoice, match="unknown voice 'nobody'"):
        bank().parse("nobody")
