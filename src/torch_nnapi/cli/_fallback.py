"""The CPU fallback's options, shared by ``convert`` and ``check``."""

from __future__ import annotations

import argparse

from ._errors import usage


def add_fallback_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fallback", action="store_true",
                   help="run on the CPU what NNAPI cannot: NNAPI regions and CPU nodes in one"
                        " module")
    p.add_argument("--fallback-op", action="append", default=[], metavar="KIND",
                   help="keep this op on the CPU, e.g. aten::softmax (repeat; needs"
                        " --fallback)")
    p.add_argument("--min-region-size", type=int, default=1, metavar="N",
                   help="regions with fewer computing NNAPI operations run on the CPU"
                        " (default: %(default)s; needs --fallback)")
    p.add_argument("--max-regions", type=int, default=None, metavar="N",
                   help="at most N NNAPI regions, the largest (needs --fallback)")


def fallback_options(args: argparse.Namespace) -> dict:
    """The converter's fallback options the command line asks for (a usage error when the
    knobs come without ``--fallback`` or out of range)."""
    if not args.fallback and (args.fallback_op or args.min_region_size != 1
                              or args.max_regions is not None):
        raise usage("--fallback-op, --min-region-size and --max-regions need --fallback")
    if args.min_region_size < 0:
        raise usage(f"--min-region-size must be >= 0, got {args.min_region_size}")
    if args.max_regions is not None and args.max_regions < 1:
        raise usage(f"--max-regions must be >= 1, got {args.max_regions}")
    for kind in args.fallback_op:
        if "::" not in kind:
            raise usage(f"--fallback-op {kind!r}: give a TorchScript op kind",
                        "e.g. --fallback-op aten::softmax")
    return dict(fallback=args.fallback, fallback_ops=list(args.fallback_op),
                min_region_size=args.min_region_size, max_regions=args.max_regions)
