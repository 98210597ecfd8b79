"""Tools over conversions: ``check`` (does a model convert, at which feature level, and does
it match PyTorch; ``check_report`` holds what it finds), ``compare`` (layer by layer),
``bench`` (where the time goes), ``generation`` (time to first token and tokens per second
of a greedy generation), ``host`` (run a converted module on the host runtime),
``codegen`` (a captured model as Python code), ``threads`` (one thread count for every
pool), ``device_plan`` (``partition_plan``: what Android does with a model on a phone's
drivers) and ``torchvision_ops`` (torchvision's operators in Python when its compiled
extension cannot load, for the files that name them)."""
