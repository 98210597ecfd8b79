"""How long an execution may run: its timeout, and the timeout of each of its WHILE loops.

An ``Execution`` turns its settings into ``RunLimits`` when it computes and hands them down
explicitly, to every step and into the models IF and WHILE call, so a runaway loop ends in
MissedDeadlineError instead of a hang.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..nnapi.codes import DEFAULT_LOOP_TIMEOUT_NS
from ..nnapi.errors import MissedDeadlineError


@dataclass(frozen=True)
class RunLimits:
    """``deadline_ns`` is a ``time.monotonic_ns()`` instant (None: no limit);
    ``loop_timeout_ns`` bounds each WHILE loop from its start."""

    loop_timeout_ns: int = DEFAULT_LOOP_TIMEOUT_NS
    deadline_ns: int | None = None

    @staticmethod
    def starting_now(loop_timeout_ns: int, timeout_ns: int) -> RunLimits:
        """Limits for an execution starting now; ``timeout_ns`` 0 means no limit."""
        deadline = time.monotonic_ns() + timeout_ns if timeout_ns else None
        return RunLimits(loop_timeout_ns, deadline)

    def check_deadline(self) -> None:
        """Raises MissedDeadlineError once the execution's deadline has passed."""
        if self.deadline_ns is not None and time.monotonic_ns() > self.deadline_ns:
            raise MissedDeadlineError("the execution ran past its timeout")


NO_LIMITS = RunLimits()
