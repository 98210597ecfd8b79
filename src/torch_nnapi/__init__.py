"""torch-nnapi: take PyTorch models to Android's Neural Networks API and run them on Linux.

Layers, data flowing down: ``nnapi`` (vocabulary, signatures, Model), ``runtime`` (host
reference runtime, NumPy only), ``capi`` (libneuralnetworks.so for Linux), ``convert``
(PyTorch -> NNAPI), ``cli`` (the ``torch-nnapi`` command).
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    """``torch_nnapi.convert(...)`` without importing torch until it is used."""
    if name == "convert":
        import importlib

        return importlib.import_module(".convert", __name__)  # a callable package
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
