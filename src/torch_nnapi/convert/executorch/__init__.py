"""The ExecuTorch back-end: NNAPI regions of a program -> the delegate blobs ExecuTorch's NNAPI
backend runs. ``blob.py`` is the blob format (docs/executorch_blob.md; ``blob_shapes.py`` its
bounded dynamic sizes: bounds and size programs), ``encode.py`` turns
NNAPI models into its models and back, ``specs.py`` the options (compile specs and the
partitioner's), ``lower.py`` an edge program -> blob through the pipeline, ``fx_regions.py``
the regions (``regions/``) as fx nodes, ``size_copies.py`` a size per reader (so regions
share none), ``partitioner.py`` ExecuTorch's ``NnapiPartitioner``,
``backend.py`` its ``NnapiBackend`` (preprocess), ``outputs.py`` the outputs' structure across
a .pte, ``pte.py`` ``to_pte``, and ``native_build.py`` builds and loads the C++ runtime
backend in ``native/``. ``partitioner.py``, ``backend.py`` and ``pte.py`` import ExecuTorch;
the rest does not."""
