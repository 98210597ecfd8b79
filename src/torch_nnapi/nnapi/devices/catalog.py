"""Finding profiles: the shipped ones by name, the user's by path, and device lists.

A device list (TORCH_NNAPI_DEVICES) is comma-separated shipped names or JSON paths. As
Android's DeviceManager does, the drivers come first, in the order listed, and
``nnapi-reference`` (the CPU) last; naming it in the list is allowed and changes nothing.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

from .errors import ProfileError
from .profile import REFERENCE_NAME, DeviceProfile, load_profile_file, parse_profile

_PACKAGE_DATA = "profiles"
DEVICES_VARIABLE = "TORCH_NNAPI_DEVICES"


@cache
def shipped_profile_names() -> tuple[str, ...]:
    """The names of the profiles that ship with torch-nnapi (AOSP's sample drivers)."""
    folder = resources.files(__package__).joinpath(_PACKAGE_DATA)
    return tuple(sorted(entry.name.removesuffix(".json") for entry in folder.iterdir()
                        if entry.name.endswith(".json")))


@cache
def shipped_profile(name: str) -> DeviceProfile:
    """A shipped profile by its device name (``nnapi-sample_quant``)."""
    if name not in shipped_profile_names():
        raise ProfileError(name, "", "no shipped profile has this name (shipped:"
                                     f" {', '.join(shipped_profile_names())})")
    text = resources.files(__package__).joinpath(_PACKAGE_DATA).joinpath(f"{name}.json") \
        .read_text(encoding="utf-8")
    profile = parse_profile(text, f"shipped profile {name}")
    if profile.name != name:
        raise ProfileError(f"shipped profile {name}", "name", f"says {profile.name!r}")
    return profile


def load_profile(name_or_path: str | Path) -> DeviceProfile:
    """A shipped profile's name, or the path of a JSON profile (anything with a ``/`` or
    ending in ``.json``)."""
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or "/" in text or text.endswith(".json"):
        return load_profile_file(name_or_path)
    return shipped_profile(text)


def profiles_from_list(listed: str, where: str = DEVICES_VARIABLE) -> tuple[DeviceProfile, ...]:
    """The drivers a device list names, in its order (``nnapi-reference`` left out: the
    caller appends the CPU device). Two devices of one name are an error, as on Android,
    where a device name is unique."""
    profiles: list[DeviceProfile] = []
    for position, entry in enumerate(part.strip() for part in listed.split(",")):
        if not entry:
            if listed.strip():
                raise ProfileError(where, f"entry {position}", "is empty")
            continue
        if entry == REFERENCE_NAME:
            continue
        profile = load_profile(entry)
        if profile.name in (p.name for p in profiles):
            raise ProfileError(where, f"entry {position}", f"a second device named"
                                                           f" {profile.name!r}")
        profiles.append(profile)
    return tuple(profiles)
