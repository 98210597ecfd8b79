"""The check's verdict rules: a quantized network's accumulated drift against its outputs."""

from __future__ import annotations

from torch_nnapi.convert.tools.check_report import Accuracy, TensorCheck


def _tensor(error: float, unit: str = "quanta") -> TensorCheck:
    return TensorCheck(name="x", shape=[1, 4], error=error, unit=unit,
                       tolerance=8 if unit == "quanta" else 1e-4)


def _accuracy(output_error: float, *layer_errors: float, isolated: bool = False,
              unit: str = "quanta") -> Accuracy:
    accuracy = Accuracy(outputs=[_tensor(output_error)],
                        layers=[_tensor(e, unit) for e in layer_errors], isolated=isolated)
    accuracy.mark_drift()
    return accuracy


def test_layers_over_tolerance_under_matching_outputs_are_drift():
    accuracy = _accuracy(0, 3, 11, 9)
    assert accuracy.agrees and accuracy.first_bad_layer is None
    assert [t.verdict for t in accuracy.layers] == ["ok", "drift", "drift"]
    assert accuracy.drift_summary() == "2 quantized layers drift up to 11 quanta"


def test_an_output_over_tolerance_makes_the_layers_mismatches():
    accuracy = _accuracy(12, 3, 11)
    assert not accuracy.agrees and accuracy.drift_summary() == ""
    assert accuracy.first_bad_layer is accuracy.layers[1]
    assert accuracy.layers[1].verdict == "MISMATCH"


def test_isolated_layers_and_float_layers_are_never_drift():
    assert not _accuracy(0, 11, isolated=True).agrees
    assert not _accuracy(0, 0.5, unit="relative").agrees
