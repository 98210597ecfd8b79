"""Builds the C++ NnapiBackend (``native/``) against the installed ExecuTorch, and loads it.

No manual step: the first ``load_backend()`` compiles the sources with the C++ compiler
(``$CXX``, else ``c++``, ``g++`` or ``clang++``) against the ExecuTorch wheel's headers and
``libexecutorch.so`` into a cache directory keyed by the ExecuTorch version and a hash of
everything that goes into the build (sources, flags, paths), then loads the library with
``RTLD_GLOBAL`` so that its static initializer registers "NnapiBackend" with the runtime
ExecuTorch's Python bindings use. On Linux torch-nnapi's ``libneuralnetworks.so`` is loaded
first, so the backend's ``dlopen("libneuralnetworks.so")`` finds it. ``native/CMakeLists.txt``
builds the same sources for Android with the NDK (README: "ExecuTorch").
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...capi import include_path, library_path

NATIVE_DIR = Path(__file__).resolve().parent / "native"
BACKEND_SOURCES = ("blob_reader.cpp", "shape_programs.cpp", "nnapi_api.cpp",
                   "tensor_convert.cpp", "nnapi_compile.cpp", "nnapi_backend.cpp")
HEADERS = ("blob_reader.h", "shape_programs.h", "nnapi_api.h", "tensor_convert.h",
           "nnapi_compile.h", "nnapi_backend.h")
LIBRARY_NAME = "libtorch_nnapi_executorch.so"
# What the wheel's libraries are compiled with (its CMake config's
# EXECUTORCH_COMPILE_DEFINITIONS); a mismatch changes the layout of the tracer's classes.
DEFINES = ("C10_USING_CUSTOM_GENERATED_MACROS", "ET_EVENT_TRACER_ENABLED")
FLAGS = ("-std=c++17", "-O2", "-fPIC", "-Wall", "-Wextra")


class BuildError(RuntimeError):
    """The backend could not be built or loaded (the message is one line saying why)."""


@dataclass(frozen=True)
class ExecuTorchInstall:
    version: str
    root: Path  # site-packages/executorch

    @property
    def include_dirs(self) -> tuple[Path, ...]:
        return (self.root / "include",
                self.root / "include/executorch/runtime/core/portable_type/c10")

    @property
    def library_dir(self) -> Path:
        return self.root / "lib"


def executorch_install() -> ExecuTorchInstall:
    """Where the ExecuTorch wheel is, found without importing it."""
    spec = importlib.util.find_spec("executorch")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError("ExecuTorch is not installed (pip install executorch; README:"
                         " \"ExecuTorch\")")
    root = Path(next(iter(spec.submodule_search_locations)))
    install = ExecuTorchInstall(importlib.metadata.version("executorch"), root)
    if not (install.library_dir / "libexecutorch.so").is_file() \
            or not (install.include_dirs[0] / "executorch").is_dir():
        raise BuildError(f"the ExecuTorch at {root} ships no libexecutorch.so and headers to"
                         " build the NNAPI backend against")
    return install


def compiler() -> str:
    """The C++ compiler to build with."""
    for candidate in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if candidate and shutil.which(candidate):
            return candidate
    raise BuildError("no C++ compiler found to build the NNAPI backend for ExecuTorch"
                     " (install g++, or set CXX)")


def compile_command(cxx: str, install: ExecuTorchInstall, output: Path) -> list[str]:
    includes = [f"-isystem{d}" for d in install.include_dirs]
    return [cxx, *FLAGS, "-shared", *(f"-D{d}" for d in DEFINES), *includes,
            f"-I{include_path()}", *(str(NATIVE_DIR / s) for s in BACKEND_SOURCES),
            f"-L{install.library_dir}", "-lexecutorch", f"-Wl,-rpath,{install.library_dir}",
            "-ldl", "-pthread", "-o", str(output)]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "torch_nnapi"


def build_key(install: ExecuTorchInstall, cxx: str) -> str:
    """A hash of everything the library is built from."""
    digest = hashlib.sha256()
    for name in (*BACKEND_SOURCES, *HEADERS):
        digest.update(name.encode() + b"\0" + (NATIVE_DIR / name).read_bytes())
    digest.update((Path(include_path()) / "NeuralNetworks.h").read_bytes())
    digest.update("\0".join([cxx, str(install.root), *FLAGS, *DEFINES]).encode())
    return digest.hexdigest()[:16]


def build_backend(force: bool = False) -> Path:
    """The built library, compiled first when the cache has none for these sources."""
    install = executorch_install()
    cxx = compiler()
    directory = cache_root() / f"executorch-{install.version}-{build_key(install, cxx)}"
    library = directory / LIBRARY_NAME
    if library.is_file() and not force:
        return library
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:  # one build at a time, across processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        if library.is_file() and not force:
            return library
        with tempfile.TemporaryDirectory(dir=directory) as scratch:
            built = Path(scratch) / LIBRARY_NAME
            result = subprocess.run(compile_command(cxx, install, built), capture_output=True,
                                    text=True, check=False)
            (directory / "build.log").write_text(result.stdout + result.stderr)
            if result.returncode != 0:
                first = next((line for line in result.stderr.splitlines()
                              if "error" in line), result.stderr.strip()[:200])
                raise BuildError(f"building the NNAPI backend failed ({first}); the full log is"
                                 f" {directory / 'build.log'}")
            os.replace(built, library)
    return library


_loaded: str | None = None


def load_backend() -> str:
    """Builds the NNAPI backend if needed and loads it (once), registering "NnapiBackend"
    with ExecuTorch's runtime; returns the library's path."""
    global _loaded
    if _loaded is not None:
        return _loaded
    if sys.platform.startswith("linux") and not os.environ.get("LIBNEURALNETWORKS_PATH"):
        # torch-nnapi's NNAPI, found by the backend's dlopen("libneuralnetworks.so")
        ctypes.CDLL(library_path(), mode=ctypes.RTLD_GLOBAL)
    elif os.environ.get("LIBNEURALNETWORKS_PATH"):
        ctypes.CDLL(os.environ["LIBNEURALNETWORKS_PATH"], mode=ctypes.RTLD_GLOBAL)
    path = build_backend()
    try:
        library = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    except OSError as e:
        raise BuildError(f"cannot load the NNAPI backend {path}: {e}") from None
    registered = int(library.torch_nnapi_executorch_registered())
    if registered != 0:
        raise BuildError(f"ExecuTorch refused to register NnapiBackend (error {registered:#x}):"
                         " is another NNAPI backend registered under that name?")
    _loaded = str(path)
    return _loaded
