"""``check --report`` and ``bench --report``: self-contained pages, drawn in a real browser.

The screenshot tests open each page in headless Chromium (Debian's ``chromium`` package;
.ci/run installs it) and check that the plot is drawn: pixels of the plot's colour inside the
plot's background. They are skipped, saying so, where no Chromium is installed.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from torch_nnapi.cli import main
from torch_nnapi.cli._html import (
    MISMATCH_COLOUR,
    OK_COLOUR,
    PLOT_BACKGROUND,
    bar_plot,
    severity_plot,
)

from ._models import AroundCumsum, QuantizedRelu, Scaled, save, save_deep_quantized

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


needs_chromium = pytest.mark.skipif(
    _chromium() is None, reason="no Chromium to render the page (Debian: apt-get install"
                                " chromium; .ci/run installs it)")


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("reports")
    scaled = save(Scaled(), torch.randn(1, 3, 4, 4), d / "scaled.pt")
    quantized = save(QuantizedRelu(), torch.randn(1, 8), d / "q.pt")
    converted = str(d / "scaled_nnapi.pt")
    assert main(["convert", scaled, "-o", converted, "--input", "1x3x4x4"]) == 0
    assert main(["check", scaled, "--input", "1x3x4x4", "--report", str(d / "check.html")]) == 0
    assert main(["check", quantized, "--input", "1x8", "--report", str(d / "q.html")]) == 0
    assert main(["bench", converted, "--runs", "2", "--report", str(d / "bench.html")]) == 0
    return {name: d / f"{name}.html" for name in ("check", "q", "bench")}


def test_pages_are_self_contained(pages):
    for path in pages.values():
        text = path.read_text()
        assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
        assert not re.search(r"(src|href)\s*=|https?://|@import|url\(", text), path
        assert "<svg" in text and "<script" not in text


def test_check_page_shows_the_verdict_layers_and_levels(pages):
    text = pages["check"].read_text()
    assert "OK, converts and matches PyTorch; needs NNAPI feature level 3" in text
    assert 'id="layer-errors"' in text and "Error along the network" in text
    assert "EXP was introduced at level 3" in text and "aten::exp at" in text
    assert "_models.py" in text  # source lines of the layers and operations
    quantized = pages["q"].read_text()
    assert "quantized engine qnnpack, checked against" in quantized


def test_bench_page_shows_time_per_operation(pages):
    text = pages["bench"].read_text()
    assert 'id="operation-times"' in text and "By operation type" in text
    assert "EXP" in text and "SOFTMAX" in text


def test_plots_escape_what_they_show():
    svg = severity_plot([(0.5, "ok", "<b>&"), (3.0, "MISMATCH", "x")], "p")
    assert "&lt;b&gt;&amp;" in svg and MISMATCH_COLOUR in svg
    assert bar_plot([], "empty", "nothing").startswith('<svg id="empty"')


def _screenshot(page: Path, tmp_path: Path):
    from PIL import Image

    chromium = _chromium()
    assert chromium is not None  # the tests that call this are marked needs_chromium
    png = tmp_path / (page.stem + ".png")
    profile = tmp_path / f"profile-{page.stem}"  # a new, empty profile each time
    result = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                             "--window-size=1200,1600", f"--screenshot={png}",
                             page.as_uri()], capture_output=True, text=True, timeout=180)
    assert result.returncode == 0 and png.exists(), result.stderr[-2000:]
    return Image.open(png).convert("RGB")


def _rgb(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]


def _near(pixel, colour, slack: int = 4) -> bool:
    return all(abs(a - b) <= slack for a, b in zip(pixel, colour, strict=True))


def _plot_pixels(image, mark: str) -> tuple[int, tuple[int, int, int, int]]:
    """(pixels of the ``mark`` colour inside the plot, the plot's bounding box)."""
    background, colour = _rgb(PLOT_BACKGROUND), _rgb(mark)
    width, height = image.size
    pixels = image.load()
    xs, ys = [], []
    for y in range(0, height, 2):
        for x in range(0, width, 2):
            if _near(pixels[x, y], background, 1):
                xs.append(x)
                ys.append(y)
    assert xs, "the plot's background is not on the page"
    box = (min(xs), min(ys), max(xs), max(ys))
    count = sum(_near(pixels[x, y], colour) for y in range(box[1], box[3] + 1)
                for x in range(box[0], box[2] + 1))
    return count, box


@needs_chromium
def test_the_check_plot_is_drawn(pages, tmp_path):
    pytest.importorskip("PIL", reason="reading the screenshot needs Pillow (torchvision's)")
    image = _screenshot(pages["check"], tmp_path)
    count, box = _plot_pixels(image, OK_COLOUR)
    assert box[2] - box[0] > 600 and box[3] - box[1] > 150, box
    assert count >= 30, f"{count} pixels of the layer points' colour in the plot {box}"


@needs_chromium
def test_the_bench_plot_is_drawn(pages, tmp_path):
    pytest.importorskip("PIL", reason="reading the screenshot needs Pillow (torchvision's)")
    image = _screenshot(pages["bench"], tmp_path)
    count, box = _plot_pixels(image, OK_COLOUR)  # the slowest type's bars
    assert count >= 200, f"{count} pixels of the bars' colour in the plot {box}"


def _cli(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it."""
    return subprocess.run([sys.executable, "-m", "torch_nnapi.cli", *argv], capture_output=True,
                          text=True, timeout=300, env={**os.environ, **env})


@pytest.fixture(scope="module")
def partitioned_pages(tmp_path_factory) -> dict[str, Path]:
    """The pages of a model NNAPI runs in two regions around a CPU cumsum, and of a quantized
    network whose layers drift while its outputs match."""
    d = tmp_path_factory.mktemp("partitioned")
    around = str(d / "around.pt")
    torch.jit.save(torch.jit.trace(AroundCumsum(), torch.randn(2, 6), strict=False), around)
    converted = str(d / "around_nnapi.pt")
    pages = {name: d / f"{name}.html" for name in ("cannot", "fallback", "bench", "drift")}
    steps = [(1, ["check", around, "--input", "2x6", "--report", str(pages["cannot"])]),
             (0, ["check", around, "--input", "2x6", "--fallback", "--report",
                  str(pages["fallback"])]),
             (0, ["convert", around, "--input", "2x6", "--fallback", "-o", converted]),
             (0, ["bench", converted, "--original", around, "--runs", "2", "--top", "3",
                  "--report", str(pages["bench"])]),
             (0, ["check", save_deep_quantized(d / "deep_q.pt"), "--input", "1x3x16x16",
                  "--quanta", "0.5", "--report", str(pages["drift"])])]
    for code, argv in steps:  # bench's eager runs recorded as contended (for testing)
        result = _cli(*argv, TORCH_NNAPI_BENCH_CONTEND="eager")
        assert result.returncode == code, (argv, result.stdout[-1500:], result.stderr[-1500:])
        if argv[0] == "bench":
            pages["bench.txt"] = d / "bench.txt"
            pages["bench.txt"].write_text(result.stdout)
    return pages


def _rendered_text(page: Path, tmp_path: Path) -> str:
    """The page's text as headless Chromium renders it (its DOM after loading, tags, styles
    and plots left out)."""
    chromium = _chromium()
    assert chromium is not None  # the tests that call this are marked needs_chromium
    result = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'p'}",
                             "--dump-dom", page.as_uri()], capture_output=True, text=True,
                            timeout=180)
    assert result.returncode == 0 and "</html>" in result.stdout, result.stderr[-2000:]
    text = re.sub(r"<style.*?</style>|<svg.*?</svg>", " ", result.stdout, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", text)))


@pytest.mark.slow
@needs_chromium
def test_the_cannot_convert_page_gives_the_fallback_hint(partitioned_pages, tmp_path):
    text = _rendered_text(partitioned_pages["cannot"], tmp_path)
    assert "FAIL, cannot convert (1 unsupported operation)" in text
    assert "aten::cumsum no lowering for this op" in text
    assert "(torch-nnapi convert --fallback) would convert the model into 2 NNAPI regions" \
        " (5 operations) with 1 node on the CPU" in text


@needs_chromium
def test_the_fallback_check_page_shows_regions_crossing_tensors_and_cpu_nodes(
        partitioned_pages, tmp_path):
    text = _rendered_text(partitioned_pages["fallback"], tmp_path)
    assert "Partitioned: 2 NNAPI regions (5 operations), 1 node on the CPU" in text
    # the steps in running order: region 0, the CPU's cumsum, region 1
    assert re.search(r"region 0 3 PyTorch nodes, feature level 1: MUL 1, ADD 1 .*"
                     r" CPU aten::cumsum .* region 1 3 PyTorch nodes, feature level 3", text)
    assert "Tensors crossing the boundaries" in text
    assert "region 0 out %13 float32[2, 6] 48 the CPU" in text
    assert "region 1 in %y.1 float32[2, 6] 48 the CPU (aten::cumsum at " in text
    assert "On the CPU, and why PyTorch op why where aten::cumsum no lowering for this op" \
        in text


@needs_chromium
def test_the_partitioned_bench_page_numbers_operations_as_the_text_does(partitioned_pages,
                                                                        tmp_path):
    text = _rendered_text(partitioned_pages["bench"], tmp_path)
    printed = partitioned_pages["bench.txt"].read_text().splitlines()
    slowest = printed[printed.index("  slowest operations:") + 2:][:3]  # --top 3
    numbers = [row.split()[0] for row in slowest]
    assert numbers and all(re.fullmatch(r"r[01]:\d", n) for n in numbers), numbers
    table = text[text.index("Slowest operations"):]
    assert all(f" {n} " in table for n in numbers), (numbers, table)
    assert "NNAPI / eager no ratio: " in text and "the eager runs were contended" in text
    assert re.search(r"Regions and CPU nodes, each timed alone part NNAPI operations median"
                     r" region 0 2 [\d.]+ ms region 1 3 [\d.]+ ms CPU nodes [\d.]+ ms", text)


@needs_chromium
def test_the_check_page_names_quantized_drift(partitioned_pages, tmp_path):
    text = _rendered_text(partitioned_pages["drift"], tmp_path)
    assert "OK, converts and matches PyTorch" in text
    assert re.search(r"Drift, not a mismatch: \d+ quantized layers drift up to 1 quanta while"
                     r" every output matches", text)
    assert "--isolated computes each layer from PyTorch's own input" in text
