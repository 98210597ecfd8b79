"""Recurrent layers (LSTM, GRU, RNN with tanh or ReLU) and their one-step cells, unrolled over
time; sequence models written the usual way."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torch_nnapi.convert.errors import ConversionError

from .. import zoo
from ..harness import check, convert, nnapi_ops

_LAYERS = {"lstm": (nn.LSTM, {}), "gru": (nn.GRU, {}), "rnn_tanh": (nn.RNN, {}),
           "rnn_relu": (nn.RNN, {"nonlinearity": "relu"})}


class Layer(nn.Module):
    """A recurrent layer returning its output sequence and final states as one flat tuple."""

    def __init__(self, mode: str, input_size: int = 4, hidden_size: int = 6, **options):
        super().__init__()
        cls, extra = _LAYERS[mode]
        self.layer = cls(input_size, hidden_size, **extra, **options)

    def forward(self, x, *states):
        if not states:
            output, final = self.layer(x)
        else:
            output, final = self.layer(x, states if len(states) == 2 else states[0])
        return (output, *final) if isinstance(final, tuple) else (output, final)


def _inputs(mode: str, batch_first: bool, cells: int, with_states: bool, steps: int = 5,
            hidden: int = 6) -> tuple:
    x = torch.randn(2, steps, 4) if batch_first else torch.randn(steps, 2, 4)
    if not with_states:
        return (x,)
    count = 2 if mode == "lstm" else 1
    return (x, *(torch.randn(cells, 2, hidden) for _ in range(count)))


# (batch_first, bidirectional, num_layers, initial states)
_CONFIGS = [(False, False, 1, False), (True, False, 2, True), (False, True, 2, True),
            (True, True, 1, False), (True, True, 2, True)]


@pytest.mark.parametrize("mode", list(_LAYERS))
@pytest.mark.parametrize("batch_first,bidirectional,layers,with_states", _CONFIGS,
                         ids=lambda v: str(v))
def test_layer_outputs_and_final_states_match_eager(mode, batch_first, bidirectional, layers,
                                                     with_states):
    torch.manual_seed(0)
    model = Layer(mode, num_layers=layers, batch_first=batch_first, bidirectional=bidirectional)
    cells = layers * (2 if bidirectional else 1)
    conversion, _ = check(model, _inputs(mode, batch_first, cells, with_states))
    if mode in ("lstm", "gru"):  # one LSTM per step and cell; a GRU step is two and a join
        per_step = 1 if mode == "lstm" else 2
        assert nnapi_ops(conversion).count("LSTM") == per_step * 5 * cells


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
def test_projected_lstm():
    torch.manual_seed(0)
    model = Layer("lstm", hidden_size=6, proj_size=3, num_layers=2, bidirectional=True)
    check(model, (torch.randn(4, 2, 4), torch.randn(4, 2, 3), torch.randn(4, 2, 6)))


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
def test_one_step_with_states_needs_feature_level_1(mode):
    """A streaming model (one step, states fed back) uses NNAPI's own LSTM or RNN step (a
    GRU two LSTM steps)."""
    torch.manual_seed(0)
    conversion, _ = check(Layer(mode), _inputs(mode, False, 1, True, steps=1))
    assert conversion.model.feature_level == 1


def test_gru_matches_eager_where_its_gates_saturate():
    """A GRU step is two LSTM steps whose constant gates saturate the sigmoid exactly; large
    inputs and weights drive the GRU's own gates to 0 and 1 as well."""
    torch.manual_seed(0)
    model = Layer("gru", hidden_size=5)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(8)
    x, h = torch.randn(6, 2, 4) * 10, torch.randn(1, 2, 5)
    check(model, (x, h))


@pytest.mark.parametrize("bidirectional", [False, True])
def test_a_gru_of_more_than_32_units_is_eleven_operations_a_step(bidirectional):
    """Where arithmetic dominates, one FULLY_CONNECTED and the gates per step, not two LSTMs
    (whose zero and identity blocks cost more arithmetic)."""
    torch.manual_seed(0)
    model = Layer("gru", hidden_size=33, num_layers=2, bidirectional=bidirectional)
    cells = 2 * (2 if bidirectional else 1)
    conversion, _ = check(model, _inputs("gru", False, cells, True, steps=3, hidden=33))
    ops = nnapi_ops(conversion)
    assert "LSTM" not in ops and ops.count("FULLY_CONNECTED") == 3 * cells


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_unbatched_sequence(mode):
    torch.manual_seed(0)
    check(Layer(mode, num_layers=2), torch.randn(5, 4))


def test_layers_without_biases_and_a_flexible_batch():
    torch.manual_seed(0)
    for mode in ("lstm", "gru"):
        model = Layer(mode, bias=False, batch_first=True).eval()
        example = _inputs(mode, True, 1, True)
        states = {i: [1] for i in range(1, len(example))}
        conversion = convert(model, example, flexible={0: [0], **states})
        for batch in (1, 3):
            xs = (torch.randn(batch, 5, 4),
                  *(torch.randn(1, batch, 6) for _ in example[1:]))
            with torch.no_grad():
                expected = model(*xs)
            for a, e in zip(conversion.module(*xs), expected, strict=True):
                assert (a - e).abs().max() <= 1e-5 * e.abs().max()


class CellDecoder(nn.Module):
    """A decoder loop over one-step cells: LSTMCell, then GRUCell and an RNNCell on top."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTMCell(4, 8)
        self.gru = nn.GRUCell(8, 6)
        self.rnn = nn.RNNCell(6, 5, nonlinearity="tanh")
        self.head = nn.Linear(5, 3)

    def step(self, x, h, c):
        h, c = self.lstm(x, (h, c))
        return self.head(self.rnn(self.gru(h))), h, c

    def forward(self, x, h, c):
        outputs = []
        for t in range(x.shape[0]):
            y, h, c = self.step(x[t], h, c)
            outputs.append(y)
        return torch.stack(outputs), h, c


class CellStep(nn.Module):
    def __init__(self, decoder: CellDecoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, x, h, c):
        return self.decoder.step(x, h, c)


def test_cell_decoder():
    """Traced, the cells decompose into linear, chunk and activations; scripted (one step:
    loops do not convert), they stay aten::lstm_cell & co."""
    torch.manual_seed(0)
    model = CellDecoder().eval()
    h, c = torch.randn(2, 8), torch.randn(2, 8)
    check(model, (torch.randn(3, 2, 4), h, c))
    conversion, _ = check(torch.jit.script(CellStep(model)), (torch.randn(2, 4), h, c))
    assert {"LSTM", "RNN"} <= set(nnapi_ops(conversion))


def test_text_classifier():
    """It reads only the final states: the output sequence is never joined (7 joins of the
    second layer's step inputs, the stacked final states and the head's torch.cat)."""
    torch.manual_seed(0)
    conversion, _ = check(zoo.TextClassifier(), torch.randint(0, 50, (2, 7)))
    assert nnapi_ops(conversion).count("CONCATENATION") == 7 + 1 + 1


def test_sequence_to_sequence_gru():
    torch.manual_seed(0)
    check(zoo.Seq2Seq(), (torch.randint(0, 30, (2, 6)), torch.randint(0, 30, (2, 4))))


def test_speech_tagger():
    torch.manual_seed(0)
    check(zoo.SpeechTagger(), torch.randn(2, 10, 12))


def _error(model, inputs, **options) -> str:
    with pytest.raises(ConversionError) as info:
        convert(model.eval(), inputs, **options)
    return str(info.value)


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")  # tracing a training model
def test_unsupported_uses_are_named():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 4)
    message = _error(Layer("lstm", batch_first=True), (x,), flexible={0: [1]})
    assert "aten::lstm" in message and "time steps depends on a flexible" in message
    training = torch.jit.trace(Layer("gru").train(), (x,))
    message = _error(training, (x,))
    assert "aten::gru" in message and "training mode" in message

    class Packed(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(4, 6, batch_first=True)

        def forward(self, x, lengths):
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)
            return self.lstm(packed)[1][0]

    message = _error(Packed(), (x, torch.tensor([5, 3])))
    assert "aten::_pack_padded_sequence" in message
