"""Progress of long work: on a terminal only, and cleared before the report."""

from __future__ import annotations

import io

from torch_nnapi.cli._progress import Progress


def test_progress_rewrites_one_line_and_clears_it():
    stream = io.StringIO()
    with Progress("check", enabled=True, stream=stream) as progress:
        progress.step("converting")
        progress.count(3, 20, "V1_0/add")
    text = stream.getvalue()
    assert "\rcheck: converting (" in text and "\rcheck: 3/20 V1_0/add (" in text
    assert text.endswith("\r") and "\n" not in text  # cleared: the report starts clean


def test_progress_is_silent_when_stdout_is_not_a_terminal(capsys):
    stream = io.StringIO()
    progress = Progress("bench", stream=stream)  # under pytest stdout is captured
    progress.step("timing")
    progress.done()
    assert stream.getvalue() == ""
