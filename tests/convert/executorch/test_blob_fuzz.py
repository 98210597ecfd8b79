"""The C++ blob reader, fuzzed: every truncation, every flipped byte (caught by the CRC, and
again with the CRC recomputed so the structural checks see it), absurd counts, other
versions and seeded random mutations. The reader runs under AddressSanitizer and UBSan in a
subprocess (``native/fuzz_blob.cpp``), so a crash, an over-read or a hang fails the test
instead of killing pytest. With clang, the same reader also runs as a libFuzzer target."""

from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from torch_nnapi.convert.executorch.blob import (
    HEADER_SIZE,
    VERSION,
    CompileSettings,
    write_blob,
)
from torch_nnapi.convert.executorch.native_build import NATIVE_DIR

from .models import dynamic_reshape_blob, if_model, plain_blob, while_model
from .test_blob import conv_blob
from .test_blob_shapes import as_version_1

SANITIZERS = "-fsanitize=address,undefined"
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
           UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
SOURCES = [str(NATIVE_DIR / name) for name in ("fuzz_blob.cpp", "blob_reader.cpp",
                                               "shape_programs.cpp")]


def _compiler(*names: str) -> str | None:
    return next((n for n in names if shutil.which(n)), None)


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cxx = _compiler(os.environ.get("CXX", ""), "c++", "g++", "clang++")
    if cxx is None:
        pytest.skip("no C++ compiler to build the blob reader's fuzz driver")
    out = tmp_path_factory.mktemp("fuzz") / "fuzz_blob"
    subprocess.run([cxx, "-std=c++17", "-O1", "-g", "-Wall", "-Wextra", "-Werror",
                    SANITIZERS, "-DTNN_FUZZ_MAIN", *SOURCES, "-o", str(out)], check=True)
    return out


def seeds() -> dict[str, bytes]:
    """Blobs exercising every part of the format: per-channel and named values, IF with
    its two branches, WHILE with its condition and body, layouts and conversions, bounded
    dynamic sizes with their size programs."""
    conv, _ = conv_blob(named_threshold=16)
    result = {"conv": write_blob(conv), "dynamic": write_blob(dynamic_reshape_blob())}
    for name, model in (("if", if_model(3)), ("while", while_model(10, 3))):
        result[name] = write_blob(plain_blob(model, CompileSettings(devices=("cpu",))))
    return result


def reseal(data: bytes | bytearray) -> bytes:
    """``data`` with its size and CRC made right again, so the reader gets past the header."""
    out = bytearray(data)
    if len(out) >= HEADER_SIZE:
        out[16:24] = struct.pack("<Q", len(out))
        out[24:28] = struct.pack("<I", zlib.crc32(bytes(out[32:])))
    return bytes(out)


def run(driver: Path, blobs: list[bytes], directory: Path) -> list[str]:
    """The reader's verdict per blob ("ok" or its error), run in batches in subprocesses."""
    verdicts: list[str] = []
    for start in range(0, len(blobs), 1500):
        batch = blobs[start:start + 1500]
        paths = []
        for i, blob in enumerate(batch):
            path = directory / f"{start + i}.bin"
            path.write_bytes(blob)
            paths.append(str(path))
        result = subprocess.run([str(driver), *paths], capture_output=True, text=True,
                                env=ENV, timeout=300, check=False)
        assert result.returncode == 0 and not result.stderr, \
            f"the reader crashed or was flagged:\n{result.stderr[-3000:]}"
        lines = result.stdout.splitlines()
        assert len(lines) == len(batch)
        verdicts.extend(lines)
        for p in paths:
            os.unlink(p)
    return verdicts


def _flips(data: bytes, masks: tuple[int, ...]) -> Iterator[bytearray]:
    for position in range(len(data)):
        for mask in masks:
            out = bytearray(data)
            out[position] ^= mask
            yield out


@pytest.mark.parametrize("name", ["conv", "if", "while", "dynamic"])
def test_the_seeds_read(driver: Path, tmp_path: Path, name: str) -> None:
    assert run(driver, [seeds()[name]], tmp_path) == ["ok"]


@pytest.mark.parametrize("name", ["conv", "if", "while", "dynamic"])
def test_every_truncation_is_refused(driver: Path, tmp_path: Path, name: str) -> None:
    data = seeds()[name]
    cuts = [data[:n] for n in range(len(data))]
    verdicts = run(driver, cuts + [reseal(c) for c in cuts[HEADER_SIZE:]], tmp_path)
    assert "ok" not in verdicts
    assert all("truncated" in v or "bytes" in v for v in verdicts[:len(cuts)])


@pytest.mark.parametrize("name", ["conv", "if", "while", "dynamic"])
def test_every_flipped_byte_is_refused_and_resealed_flips_never_crash(
        driver: Path, tmp_path: Path, name: str) -> None:
    data = seeds()[name]
    raw = [bytes(b) for b in _flips(data, (0x01,))]
    assert "ok" not in run(driver, raw, tmp_path)
    resealed = [reseal(b) for b in _flips(data, (0x01, 0xFF))]
    verdicts = run(driver, resealed, tmp_path)
    # a changed scale or constant byte is still a well-formed blob; a changed structure not
    assert 0 < verdicts.count("ok") < len(verdicts)


def test_absurd_counts_and_other_versions_are_refused(driver: Path, tmp_path: Path) -> None:
    data = seeds()["conv"]
    counts = []
    for offset in range(HEADER_SIZE, len(data) - 3):
        for value in (0xFFFFFFFF, 0x7FFFFFFF, 0x10000):
            out = bytearray(data)
            out[offset:offset + 4] = struct.pack("<I", value)
            counts.append(reseal(out))
    run(driver, counts, tmp_path)  # never crashes, never allocates from a bad count
    versions = []
    for version in (0, VERSION + 1, 0xFFFFFFFF):
        out = bytearray(data)
        out[8:12] = struct.pack("<I", version)
        versions.append(reseal(out))
    verdicts = run(driver, versions, tmp_path)
    assert all("version" in v for v in verdicts), verdicts
    assert "update it" in verdicts[1]


def test_random_mutations_never_crash(driver: Path, tmp_path: Path) -> None:
    rng = random.Random(23)
    blobs = []
    for name, data in seeds().items():
        for _ in range(1500 if name == "conv" else 500):
            out = bytearray(data)
            for _ in range(rng.randint(1, 8)):
                kind = rng.random()
                at = rng.randrange(HEADER_SIZE, len(out))
                if kind < 0.6:
                    out[at] = rng.randrange(256)
                elif kind < 0.8:
                    del out[at:at + rng.randint(1, 16)]
                else:
                    out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
            blobs.append(reseal(out))
    run(driver, blobs, tmp_path)


@pytest.mark.slow
def test_libfuzzer_target(tmp_path: Path) -> None:
    clang = _compiler("clang++", "clang++-14")
    if clang is None:
        pytest.skip("clang++ is not installed (.ci/run installs it): the libFuzzer target"
                    " is not built; the sanitized driver tests above still ran")
    binary = tmp_path / "fuzz_blob_libfuzzer"
    sanitizers = SANITIZERS.replace("-fsanitize=", "-fsanitize=fuzzer,")
    build = subprocess.run([clang, "-std=c++17", "-O1", "-g", sanitizers, *SOURCES, "-o",
                            str(binary)], capture_output=True, text=True, check=False)
    if build.returncode != 0 and "fuzzer" in build.stderr:
        pytest.skip(f"clang cannot link libFuzzer here: {build.stderr.splitlines()[-1]}")
    assert build.returncode == 0, build.stderr
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, data in seeds().items():
        (corpus / name).write_bytes(data)
    # A single allocation over 256 MB is a finding (a count the reader trusted); the whole
    # process may grow past that with ASan's quarantine of freed blocks, which depends on
    # how many inputs ran, so the RSS bound is looser.
    result = subprocess.run([str(binary), "-max_total_time=10", "-malloc_limit_mb=256",
                             "-rss_limit_mb=3072", "-timeout=5",
                             f"-artifact_prefix={tmp_path}/", str(corpus)],
                            capture_output=True, text=True, env=ENV, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-3000:]


def test_a_version_1_blob_still_reads(driver: Path, tmp_path: Path) -> None:
    """The runtime reads what the previous writer made: version 1, no SHAP section."""
    assert run(driver, [as_version_1(seeds()["conv"])], tmp_path) == ["ok"]
