"""The CPU fallback: what NNAPI cannot run stays on PyTorch's CPU kernels.

``trial.py`` finds which nodes NNAPI can run, ``partition.py`` forms the NNAPI regions and
the running order under the policy's knobs (each region lowered by the pipeline), ``stitch.py``
builds the TorchScript module that runs them, ``report.py`` describes the result,
``convert.py`` puts these together for ``convert(..., fallback=True)``, and ``run.py`` takes
a partitioned module apart again for the tools.
"""
