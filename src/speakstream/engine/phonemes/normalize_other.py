"""Text normalisation for the languages other than English, before their G2P.

espeak-ng reads numbers and most symbols in its own language, cn2an (inside the Chinese G2P) and
misaki's kana numerals (Japanese) read digits; this rewrites what they read badly or in English:
currency signs, percentages, numeric dates and clock times, in the language of the text.
"""

from __future__ import annotations

import re

from speakstream.engine.phonemes.languages import Language

_CURRENCY = {
    "es": {"€": "euros", "$": "dólares", "£": "libras"},
    "fr-fr": {"€": "euros", "$": "dollars", "£": "livres"},
    "it": {"€": "euro", "$": "dollari", "£": "sterline"},
    "pt-br": {"R$": "reais", "€": "euros", "$": "dólares", "£": "libras"},
    "hi": {"₹": "रुपये", "$": "डॉलर", "€": "यूरो"},
    "zh": {"¥": "元", "￥": "元", "$": "美元", "€": "欧元"},
    "ja": {"¥": "円", "￥": "円", "$": "ドル", "€": "ユーロ"},
}
_PERCENT = {"es": "por ciento", "fr-fr": "pour cent", "it": "per cento", "pt-br": "por cento", "hi": "प्रतिशत"}
_HOURS = {"es": "{h} y {m}", "fr-fr": "{h} heures {m}", "it": "{h} e {m}", "pt-br": "{h} e {m}", "hi": "{h} बजकर {m}"}
_MONTHS = {
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
    "fr-fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "it": "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre",
    "pt-br": "janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro",
}
_DATE_FORMS = {"es": "{d} de {m} de {y}", "fr-fr": "{d} {m} {y}", "it": "{d} {m} {y}", "pt-br": "{d} de {m} de {y}"}
_NUMERIC_DATE = re.compile(
    r"(?<![\d/-])(?<!\d\.)(?:(\d{1,2})/(\d{1,2})/(\d{4})|(\d{4})-(\d{2})-(\d{2}))(?![\d/-])(?!\.\d)"
)
_NUMBER = r"(?<![\d.,])\d++(?:[.,]\d++)*+"


def normalize_other(text: str, language: Language) -> str:
    tag = language.tag
    for sign, word in _CURRENCY.get(tag, {}).items():
        text = _currency(text, sign, word, cjk=tag in ("zh", "ja"))
    if tag in _PERCENT:
        text = re.sub(rf"({_NUMBER})\s?%", rf"\1 {_PERCENT[tag]}", text)
    if tag in _MONTHS:
        text = _NUMERIC_DATE.sub(lambda m: _date(m, tag), text)
    if tag in _HOURS:
        text = re.sub(r"(?<![\d:])(\d{1,2}):([0-5]\d)(?![\d:])", lambda m: _clock(m, _HOURS[tag]), text)
    return text


def _currency(text: str, sign: str, word: str, *, cjk: bool) -> str:
    """``$5`` / ``5 $`` -> ``5 dólares`` (``5美元`` in Chinese and Japanese)."""
    space = "" if cjk else " "
    sign_re = re.escape(sign)
    text = re.sub(rf"(?<![A-Za-z]){sign_re}\s?({_NUMBER})", lambda m: f"{m.group(1)}{space}{word}", text)
    return re.sub(rf"({_NUMBER})\s?{sign_re}", lambda m: f"{m.group(1)}{space}{word}", text)


def _date(m: re.Match[str], tag: str) -> str:
    """``15/03/2026`` (day first, as these languages write it) or ``2026-03-15`` -> words."""
    day, month, year = (m.group(1), m.group(2), m.group(3)) if m.group(1) else (m.group(6), m.group(5), m.group(4))
    if not (1 <= int(month) <= 12 and 1 <= int(day) <= 31):
        return m.group(0)
    return _DATE_FORMS[tag].format(d=int(day), m=_MONTHS[tag].split()[int(month) - 1], y=year)


def _clock(m: re.Match[str], form: str) -> str:
    hour, minute = int(m.group(1)), int(m.group(2))
    if hour > 24:
        return m.group(0)
    return str(hour) if minute == 0 else form.format(h=hour, m=minute)
