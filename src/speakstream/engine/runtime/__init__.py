"""The model runtime: the ONNX Runtime sessions and the cores they run on (``cores``), the model's
graphs, split to run beside each other (``graphs``), and how fast they run here (``speed``). The windowing
algorithm (``engine/windows``) decides what to run; this package runs it."""
