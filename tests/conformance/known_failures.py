"""CTS tests known to fail on the host runtime, each with the reason.

Test id -> why it cannot pass. Each entry is a strict xfail in the suite: fixing the cause
turns the suite red until the entry is removed. The README's operation table counts these.
"""

KNOWN_FAILURES: dict[str, str] = {}
