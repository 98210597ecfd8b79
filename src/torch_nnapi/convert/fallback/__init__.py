"""The CPU fallback: what NNAPI cannot run stays on PyTorch's CPU kernels.

The regions come from ``regions/`` (the trial lowering and the partition, shared with the
ExecuTorch partitioner); ``stitch.py`` builds the TorchScript module that runs them,
``report.py`` describes the result, ``bodies.py`` converts the blocks of the loops and
branches left on the CPU as graphs of their own (their regions called from the loop),
``convert.py`` puts these together for ``convert(..., fallback=True)``, and ``run.py`` takes
a partitioned module apart again for the tools.
"""
