"""Builds torch_nnapi/capi/libneuralnetworks.so, the NNAPI C API for Linux, and
torch_nnapi/runtime/native/_kernels, the host runtime's native kernels.

Everything else about the package is in pyproject.toml. The library is a plain shared library
(SONAME libneuralnetworks.so), not a Python extension module: it does not link libpython. A
program that is not Python loading it makes it start the Python of the environment it is
installed in, found at run time; the libpython and Python executable recorded here are the
fallbacks (see capi/neuralnetworks.c). The kernels are an ordinary extension module of
portable C11; their vector code is selected at run time (see runtime/native/tnn.h).
"""

from __future__ import annotations

import glob
import os
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

LIBRARY = "torch_nnapi.capi.libneuralnetworks"
SONAME = "libneuralnetworks.so"
CAPI = os.path.join("src", "torch_nnapi", "capi")
NATIVE = os.path.join("src", "torch_nnapi", "runtime", "native")


def c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def shared_libpython() -> str:
    """This Python's shared library, or its bare name for the dynamic loader to search."""
    name = sysconfig.get_config_var("INSTSONAME") or ""
    if ".so" not in name:  # a static build names its archive; a shared one may exist anyway
        name = f"libpython{sysconfig.get_config_var('LDVERSION')}.so.1.0"
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    for directory in (libdir, os.path.join(libdir, multiarch)):
        candidate = os.path.join(directory, name)
        if os.path.exists(candidate):
            return candidate
    return name


class BuildSharedLibrary(build_ext):
    """build_ext that names the NNAPI library libneuralnetworks.so, without a Python suffix,
    and always rebuilds it: the Python it records is not among the files make-style checks
    compare (pip builds in the source tree, where an earlier build may have left it)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        self.force = True

    def get_ext_filename(self, fullname: str) -> str:
        # Called with the full dotted name, and with its last part alone when building.
        if LIBRARY.endswith("." + fullname):
            return SONAME
        if fullname == LIBRARY:
            return os.path.join(*fullname.split(".")[:-1], SONAME)
        return super().get_ext_filename(fullname)


libneuralnetworks = Extension(
    LIBRARY,
    sources=[os.path.join(CAPI, "neuralnetworks.c"), os.path.join(CAPI, "environment.c")],
    depends=[os.path.join(CAPI, "include", "NeuralNetworks.h"),
             os.path.join(CAPI, "environment.h")],
    include_dirs=[os.path.join(CAPI, "include")],
    define_macros=[
        # the fallbacks when the installed environment cannot be found at run time
        ("TNN_LIBPYTHON", c_string(shared_libpython())),
        ("TNN_PYTHON_EXECUTABLE", c_string(sys.executable)),
        # what to look for in the environment the library is installed in
        ("TNN_PYTHON_VERSION", c_string(sysconfig.get_config_var("py_version_short"))),
        ("TNN_LIBPYTHON_NAME", c_string(os.path.basename(shared_libpython()))),
        ("TNN_MULTIARCH", c_string(sysconfig.get_config_var("MULTIARCH") or "")),
    ],
    libraries=["dl", "pthread"],
    extra_compile_args=["-Wall", "-Wextra"],
    # --no-undefined proves that nothing from libpython is linked.
    extra_link_args=[f"-Wl,-soname,{SONAME}", "-Wl,--no-undefined"],
)

kernels = Extension(
    "torch_nnapi.runtime.native._kernels",
    sources=sorted(glob.glob(os.path.join(NATIVE, "*.c"))),
    depends=sorted(glob.glob(os.path.join(NATIVE, "*.h"))),
    libraries=["pthread"],
    # -ffp-contract=off: no fused multiply-add, so float arithmetic rounds as NumPy's does
    # (the quantized kernels' float steps must match the reference bit for bit).
    extra_compile_args=["-std=c11", "-O3", "-Wall", "-Wextra", "-Wno-psabi",
                        "-ffp-contract=off"],
)

setup(ext_modules=[libneuralnetworks, kernels], cmdclass={"build_ext": BuildSharedLibrary})
