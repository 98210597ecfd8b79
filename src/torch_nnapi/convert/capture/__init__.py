"""Front-ends: a PyTorch model -> the :class:`~.graph.Graph` the lowerings walk.

``graph.py`` is the graph itself (shared by every reader), ``script.py`` captures through
TorchScript tracing and freezing, ``export.py`` through torch.export, ``qdq.py`` folds PT2E's
quantize/dequantize pairs into quantized ops (``packed.py`` holds their parameters),
``export_flow.py`` turns an exported program's cond, while_loop and scan into TorchScript
control flow for the CPU fallback, and ``frontend.py`` picks and runs a front-end for a
model.
"""
