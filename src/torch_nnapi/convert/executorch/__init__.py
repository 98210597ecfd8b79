"""The ExecuTorch back-end: an NNAPI Model -> the delegate blob ExecuTorch's NNAPI backend
runs. ``blob.py`` is the blob format (docs/executorch_blob.md), ``encode.py`` turns NNAPI
models into its models and back, ``specs.py`` the backend's options as compile specs,
``lower.py`` an edge program -> blob through the pipeline, ``backend.py`` ExecuTorch's
``NnapiBackend`` (preprocess), the partitioner and ``to_pte``, and ``native_build.py``
builds and loads the C++ runtime backend in ``native/``. Only ``backend.py`` imports
ExecuTorch."""
