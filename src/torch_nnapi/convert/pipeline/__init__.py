"""The pipeline: a captured graph -> an NNAPI Model. ``lowerer.py`` walks the graph and calls
each node's lowering (folding what is known at conversion time), ``patterns.py`` rewrites
patterns lowered as a whole, ``baked.py`` guards decisions a capture bakes in, and
``layout_choice.py`` is the entry point: :func:`~.layout_choice.lower_graph` (with the
input layouts chosen) and :func:`~.layout_choice.require_level`; ``called.py`` lowers the
graph modules an IF or WHILE calls (torch.cond, torch.while_loop) into models of their own."""

from . import called  # noqa: F401 - registers the lowering of the models IF and WHILE call
