"""Reading a profile's JSON with the path of every field, so each problem names its field."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .errors import ProfileError


@dataclass(frozen=True)
class Field:
    """A JSON value and where it is: ``where`` the file, ``path`` the field inside it."""

    where: str
    path: str
    value: Any

    def error(self, problem: str) -> ProfileError:
        return ProfileError(self.where, self.path, problem)

    def child(self, key: str | int) -> Field:
        """The member ``key`` of this object, or element ``key`` of this list."""
        path = f"{self.path}[{key}]" if isinstance(key, int) else \
            f"{self.path}.{key}" if self.path else key
        return Field(self.where, path, self.value[key])

    def members(self, allowed: tuple[str, ...], required: tuple[str, ...] = ()) \
            -> dict[str, Field]:
        """This object's members, each a Field; an unknown or missing member is an error."""
        if not isinstance(self.value, dict):
            raise self.error(f"expected an object, got {_kind(self.value)}")
        for key in self.value:
            if key not in allowed:
                raise self.child(key).error(f"unknown field (expected one of {', '.join(allowed)})")
        for key in required:
            if key not in self.value:
                raise self.error(f"missing field {key!r}")
        return {key: self.child(key) for key in self.value}

    def entries(self) -> Iterator[tuple[str, Field]]:
        """The members of an object whose keys are the caller's to interpret."""
        if not isinstance(self.value, dict):
            raise self.error(f"expected an object, got {_kind(self.value)}")
        for key in self.value:
            yield key, self.child(key)

    def items(self) -> list[Field]:
        """The elements of a list (a single value counts as a list of one)."""
        if isinstance(self.value, list):
            if not self.value:
                raise self.error("expected at least one value, got an empty list")
            return [self.child(i) for i in range(len(self.value))]
        return [self]

    def string(self) -> str:
        if not isinstance(self.value, str) or not self.value:
            raise self.error(f"expected a non-empty string, got {_kind(self.value)}")
        return self.value

    def boolean(self) -> bool:
        if not isinstance(self.value, bool):
            raise self.error(f"expected true or false, got {_kind(self.value)}")
        return self.value

    def integer(self, low: int | None = None, high: int | None = None) -> int:
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            raise self.error(f"expected an integer, got {_kind(self.value)}")
        if (low is not None and self.value < low) or (high is not None and self.value > high):
            raise self.error(f"{self.value} is outside [{low}, {high}]")
        return self.value

    def number(self, *, positive: bool = False) -> float:
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)):
            raise self.error(f"expected a number, got {_kind(self.value)}")
        number = float(self.value)
        if not math.isfinite(number) or (positive and number <= 0):
            raise self.error(f"{self.value} is not a {'positive ' if positive else ''}finite"
                             " number")
        return number


def _kind(value: object) -> str:
    if isinstance(value, str):
        return f"the string {value!r}"
    if value is None or isinstance(value, (bool, int, float)):
        return f"{value!r}".replace("None", "null").replace("True", "true") \
            .replace("False", "false")
    return {"dict": "an object", "list": "a list"}.get(type(value).__name__, "a value")
