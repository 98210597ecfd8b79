"""What lowerings build an NNAPI model with: the model under construction (``context.py``:
the :class:`~.context.Converter` a lowering receives as ``cx``), what a PyTorch tensor is in
it (``values.py``), sizes known only at load time (``symbolic.py``), dimension orders and
merged dimensions (``layout.py``, ``merged.py``), operands by signature name
(``binding.py``), and the building blocks several op families share: argument checks,
dtype promotion and broadcasting (``common.py``), element-wise arithmetic, float round trips
of quantized tensors and reductions (``arithmetic.py``), slices, splits, gathers,
concatenation, permute and squeeze (``slicing.py``), the 2-D operations' input layout and
constant weights (``spatial.py``), and products of two tensors (``contraction.py``)."""
