"""The one error a bad device profile gives."""

from __future__ import annotations


class ProfileError(ValueError):
    """A device profile that cannot be used: its message is one line, ``<where>: <field>:
    <problem>`` (``where`` names the file or the shipped profile; ``field`` the JSON path, as
    ``supportedOperations[2].inputs.input.type``), so that a user can fix that field."""

    def __init__(self, where: str, field: str, problem: str):
        self.where, self.field, self.problem = where, field, problem
        super().__init__(f"{where}: {field}: {problem}" if field else f"{where}: {problem}")
