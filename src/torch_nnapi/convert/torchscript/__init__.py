"""The PyTorch Mobile back-end: an NNAPI Model -> the TorchScript module PyTorch Mobile's
NNAPI runtime (``torch.classes._nnapi.Compilation``) runs. ``serialize.py`` writes the model
in that runtime's format (``deserialize.py`` reads it back), ``module.py`` is the module's
TorchScript code, ``spec.py`` what it is built from, and ``program.py`` builds it from a
lowered model; ``generate.py`` is the greedy decoding loop around a converted decoder step
with a fixed-size key/value cache."""
