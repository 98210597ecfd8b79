"""Which parts of a captured graph NNAPI runs: the regions, whichever back-end runs the rest.

``trial.py`` finds which nodes NNAPI can run (a trial lowering that places what fails on the
CPU instead of stopping), ``partition.py`` forms the NNAPI regions and their running order
under the policy's knobs, each region lowered by the pipeline. The TorchScript CPU fallback
(``fallback/``) stitches the regions into one module; the ExecuTorch partitioner
(``executorch/``) tags them in the edge program and leaves the rest to ExecuTorch's kernels.
"""
