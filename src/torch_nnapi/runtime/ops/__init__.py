"""Kernels by operation family; importing this package registers all of them.

Modules with a leading underscore are helpers private to the families; ``spatial`` and
``shape_common`` are helpers the native kernels (runtime/native) use too.
"""

import importlib
import pkgutil


def _load_families() -> None:
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


_load_families()
