import subprocess
import sys

import speakstream


def test_all_names_exist() -> None:
    assert len(set(speakstream.__all__)) == len(speakstream.__all__)
    for name in speakstream.__all__:
        assert hasattr(speakstream, name), name
    assert "IncrementalSentenceChunker" in speakstream.__all__


def test_import_is_light() -> None:
    """Importing the package loads no model, no onnxruntime session, no spaCy."""
    heavy = "('onnxruntime', 'spacy', 'misaki', 'faster_whisper')"
    code = f"import sys, speakstream; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
