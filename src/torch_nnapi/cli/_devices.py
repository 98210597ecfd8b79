"""``--device NAME_OR_JSON`` (``check``, ``bench``, ``inspect``): what Android does with the
converted model on a phone with those drivers (docs/device_profiles.md)."""

from __future__ import annotations

import argparse
from typing import Any

from ._errors import CliError, ExitCode, bad_file, usage


def add_device_option(p: argparse.ArgumentParser, *, preference: bool = True,
                      what: str = "shows Android's steps, the operations left to"
                                  " nnapi-reference and why, and the estimated time per"
                                  " step") -> None:
    """``--device`` and, unless the command has its own, ``--preference``."""
    p.add_argument("--device", action="append", default=[], metavar="NAME_OR_JSON",
                   help="a phone's NNAPI driver: a shipped profile (nnapi-sample_quant, ...)"
                        f" or a profile's JSON file (repeat for several); {what}")
    if not preference:
        return
    p.add_argument("--preference", default="sustained_speed",
                   choices=("fast_single_answer", "sustained_speed", "low_power"),
                   help="the compilation preference Android partitions for, with --device"
                        " (default: %(default)s)")


def device_profiles(args: argparse.Namespace) -> tuple[Any, ...]:
    """The profiles ``--device`` names, read before anything runs (nnapi-reference last);
    one line naming the profile and field at fault otherwise."""
    if not args.device:
        return ()
    from ..convert.tools.device_plan import device_list
    from ..nnapi.devices import ProfileError

    try:
        profiles = device_list(args.device)
    except ProfileError as e:
        file = any("/" in d or d.endswith(".json") for d in args.device)
        raise (bad_file(str(e)) if file else usage(str(e))) from None
    names = [p.name for p in profiles]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise usage(f"--device names {', '.join(twice)} twice")
    return profiles


def plans_of_module(module: Any, profiles: tuple[Any, ...], preference: str | int,
                    examples: tuple[Any, ...] | None = None) -> list[Any]:
    """The plan of a converted module's NNAPI model, or of each region of a partitioned
    one."""
    from ..convert.tools.device_plan import partition_plan, region_plans
    from ..nnapi.errors import NnapiError

    try:
        if _partitioned(module):
            return region_plans(module, profiles, preference)
        return [partition_plan(module, examples, devices=profiles, preference=preference)]
    except NnapiError as e:
        raise CliError(f"the devices cannot run the model: {e}", ExitCode.RUN_FAILED) from None


def render_plans(plans: list[Any]) -> list[str]:
    """Each plan's lines (a partitioned module: one block per region)."""
    if len(plans) == 1:
        return plans[0].render()
    lines = []
    for k, made in enumerate(plans):
        lines.append(f"region {k}:")
        lines += ["  " + line for line in made.render()]
    return lines


def plans_summary(plans: list[Any]) -> str:
    """The plans of a model's NNAPI models (a partitioned one's regions) in a few words:
    steps, operations on nnapi-reference and their share of the estimated time."""
    from ..nnapi.devices import REFERENCE_NAME

    steps = sum(len(made.steps) for made in plans)
    fallen = sum(len(made.fallen) for made in plans)
    counted = f"{steps} step(s) in {len(plans)} NNAPI model(s), {fallen} operation(s) on" \
        f" {REFERENCE_NAME}"
    unknown = next((made.estimate.unknown for made in plans if made.estimate.unknown), "")
    if unknown:
        return f"{counted}, estimate unknown ({unknown})"
    seconds = sum(made.estimate.seconds or 0.0 for made in plans)
    on_reference = sum((made.estimate.seconds or 0.0) * (made.reference_share or 0.0)
                       for made in plans)
    share = on_reference / seconds if seconds else 0.0
    return f"{counted}, estimated {seconds * 1e3:.3g} ms, {share:.0%} on {REFERENCE_NAME}"


def plans_json(plans: list[Any]) -> list[dict[str, Any]]:
    return [made.as_dict() for made in plans]


def _partitioned(module: Any) -> bool:
    from ..convert.fallback.run import is_partitioned

    return bool(is_partitioned(module))

