"""torch-nnapi: take PyTorch models to Android's Neural Networks API and run them on Linux.

Layers, data flowing down: ``nnapi`` (vocabulary, signatures, Model), ``runtime`` (host
reference runtime, NumPy only), ``capi`` (libneuralnetworks.so for Linux), ``convert``
(PyTorch -> NNAPI), ``cli`` (the ``torch-nnapi`` command).
"""

__version__ = "0.1.0"
