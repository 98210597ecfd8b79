"""How every layer's messages write counts."""

from __future__ import annotations

from torch_nnapi.nnapi.errors import counted


def test_counts_agree_with_their_nouns():
    assert [counted(n, "node") for n in (0, 1, 2)] == ["0 nodes", "1 node", "2 nodes"]
    assert counted(1, "NNAPI region") == "1 NNAPI region"
    assert counted(3, "index", "indices") == "3 indices"
