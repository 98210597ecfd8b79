"""An SSD-style detector through the ExecuTorch back-end, its post-processing on ExecuTorch's
portable kernels.

torchvision's own detectors do not export: ``torch.export`` (non-strict) stops in
``ssdlite320_mobilenet_v3_large``'s ``postprocess_detections`` with
GuardOnDataDependentSymNode at ``torchvision.ops.boxes.batched_nms``'s ``boxes.numel() >
4000`` (the number of boxes left by the per-class score threshold is data-dependent, and
that branch guards on it). ``ssd300_vgg16`` shares SSD's post-processing, and RetinaNet's and
Faster R-CNN's call the same ``batched_nms``, so they stop there too (not run here: each
costs minutes to find the same guard).

So ssd.py's detector keeps SSD's structure with static shapes; the test lowers it with
``fallback_ops`` naming the post-processing's operators (the decoding's ``exp``, the
score threshold's ``where``, ``topk``, the NMS's comparisons...), so that the backbone and
heads are one NNAPI delegate and the box decoding and NMS stay on ExecuTorch's kernels; run
in a fresh process, boxes and scores match eager within 1e-4 of their magnitude and the
labels exactly. Slow (``-m slow``, run by .ci/run)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("executorch", reason="ExecuTorch is not installed (pip install"
                    " '.[executorch]' -c constraints.txt, README: \"ExecuTorch\")")

import torch  # noqa: E402

from torch_nnapi.convert.capture.export import aten_overload  # noqa: E402

from .executorch_matrix import RELATIVE_TOLERANCE, lower, relative_error, run_all  # noqa: E402
from .ssd import SsdDetector  # noqa: E402

pytestmark = pytest.mark.slow

SEED = 0
MARGIN = 1e-5  # eager's decisions this far from flipping: far above float32's roundings


class PostProcessing(torch.nn.Module):
    def __init__(self, detector: SsdDetector) -> None:
        super().__init__()
        self.detector = detector

    def forward(self, offsets: torch.Tensor, logits: torch.Tensor) -> object:
        return self.detector.postprocess(offsets, logits)


def post_processing_ops(detector: SsdDetector) -> list[str]:
    """The op kinds of the detector's decoding and NMS, as ``fallback_ops`` names them."""
    priors = int(detector.priors.shape[0])
    program = torch.export.export(PostProcessing(detector), (
        torch.randn(priors, 4), torch.randn(priors, detector.classes)), strict=False)
    kinds = set()
    for graph in (program.graph, program.run_decompositions().graph):  # as ExecuTorch sees it
        kinds |= {aten_overload(n.target)._schema.name for n in graph.nodes
                  if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)}
    return sorted(kinds)


def test_ssd_detector_postprocessing_stays_on_executorch(tmp_path: Path) -> None:
    torch.manual_seed(0)
    detector = SsdDetector().eval()
    image = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(SEED))
    with torch.no_grad():
        eager = detector(image)
    kept = int((eager["scores"] > 0).sum())
    assert 0 < kept < detector.candidates, "the image must keep some boxes and drop some"
    # measured: top scores 8.7e-5 apart, 2.2e-3 from the score threshold, IoUs 1.5e-3 from
    # the NMS threshold
    assert min(detector.margins(image)) > MARGIN, detector.margins(image)
    ops = post_processing_ops(detector)
    assert {"aten::topk", "aten::exp"} <= set(ops), ops
    made = lower(tmp_path, "ssd", detector, (image,), fallback_ops=ops)
    run_all(tmp_path, ["ssd"])
    error = relative_error(tmp_path, "ssd", made)
    print(f"ssd: max error {error:.3g} of the magnitude, {made.delegates} delegate(s), kept"
          f" {kept} of {detector.candidates} boxes, kernels {made.kernels},"
          f" lowered in {made.seconds:.1f} s")
    assert error <= RELATIVE_TOLERANCE
    assert made.delegates == 1
    ran = {kernel.split(".")[0] for kernel in made.kernels}
    assert {"aten::topk", "aten::exp", "aten::any"} <= ran, made.kernels
