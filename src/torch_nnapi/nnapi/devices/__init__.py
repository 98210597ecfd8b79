"""NNAPI devices as Android sees them: profiles of drivers (JSON, docs/device_profiles.md).

- ``profile``: the profile (name, type, feature level, version, Capabilities, support rules)
  and reading it; ``reference_profile`` is Android's CPU device, ``nnapi-reference``.
- ``rules``: which operations a device supports, as rules over operations and operands.
- ``catalog``: the shipped profiles (AOSP's sample drivers), user files, device lists
  (TORCH_NNAPI_DEVICES).
- ``errors``: ProfileError, one line naming the field at fault.
"""

from .catalog import (
    DEVICES_VARIABLE,
    load_profile,
    profiles_from_list,
    shipped_profile,
    shipped_profile_names,
)
from .errors import ProfileError
from .profile import (
    CPU_PERFORMANCE,
    FLT_MAX,
    NO_PERFORMANCE_INFO,
    REFERENCE_NAME,
    Capabilities,
    DeviceProfile,
    PerformanceInfo,
    load_profile_file,
    parse_profile,
    reference_profile,
)
from .rules import OperandCondition, SupportRule, supported_operations, why_unsupported

__all__ = [
    "CPU_PERFORMANCE",
    "Capabilities",
    "DEVICES_VARIABLE",
    "DeviceProfile",
    "FLT_MAX",
    "NO_PERFORMANCE_INFO",
    "OperandCondition",
    "PerformanceInfo",
    "ProfileError",
    "REFERENCE_NAME",
    "SupportRule",
    "load_profile",
    "load_profile_file",
    "parse_profile",
    "profiles_from_list",
    "reference_profile",
    "shipped_profile",
    "shipped_profile_names",
    "supported_operations",
    "why_unsupported",
]
