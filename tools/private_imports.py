"""Lists where a module of torch-nnapi uses another module's private names:
``python tools/private_imports.py [PACKAGE ...]`` (default: all of src/torch_nnapi).

A private name is one with a leading underscore. Reported, in the modules of the packages
named (folders under src/torch_nnapi): ``from m import _x``; ``m._x`` where ``m`` names an
imported module; and imports of a private module (``_m``) from outside the package that
holds it. A package's own private modules are its business, and so are other projects'
(torch's ``_pytree`` is how everyone reads a pytree). Exit code 1 when anything is found:
``.ci/run`` runs it, because such a reach is a missing public API.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PROJECT = "torch_nnapi"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _absolute(importer: str, is_package: bool, level: int, module: str | None) -> str:
    """The module a (possibly relative) ``from ... import`` names."""
    if level == 0:
        return module or ""
    base = importer.split(".")[: None if is_package else -1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _is_module(name: str) -> bool:
    path = SRC.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists() or \
        any(path.parent.glob(f"{path.name}.*.so"))


def _foreign_private_module(target: str, importer: str) -> str | None:
    """The first private module on ``target``'s path whose package does not hold
    ``importer``."""
    parts = target.split(".")
    if parts[0] != PROJECT:
        return None
    for k, part in enumerate(parts):
        package = ".".join(parts[:k])
        if _private(part) and importer != package and not importer.startswith(package + "."):
            return ".".join(parts[: k + 1])
    return None


def private_uses(path: Path) -> list[str]:
    """Where the module at ``path`` reaches into other modules' private names."""
    importer = _module_name(path)
    tree = ast.parse(path.read_text())
    found: list[str] = []
    modules: dict[str, str] = {}  # local name -> module, for attribute reads

    def report(node: ast.AST, what: str) -> None:
        found.append(f"{path.relative_to(SRC.parent)}:{getattr(node, 'lineno', 0)}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _absolute(importer, path.name == "__init__.py", node.level, node.module)
            foreign = _foreign_private_module(source, importer)
            if foreign:
                report(node, f"imports from private module {foreign}")
            for alias in node.names:
                full = f"{source}.{alias.name}"
                if _is_module(full):
                    modules[alias.asname or alias.name] = full
                    inner = _foreign_private_module(full, importer)
                    if inner and inner != foreign:
                        report(node, f"imports private module {inner}")
                elif _private(alias.name) and source.startswith(PROJECT) and \
                        source != importer:  # a package's own private part (a C extension)
                    report(node, f"imports {full}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                foreign = _foreign_private_module(alias.name, importer)
                if foreign and alias.name.startswith("torch_nnapi."):
                    report(node, f"imports private module {foreign}")
                if alias.asname:
                    modules[alias.asname] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id in modules and _private(node.attr) and \
                modules[node.value.id] != importer and \
                modules[node.value.id].startswith(PROJECT):
            report(node, f"reads {modules[node.value.id]}.{node.attr}")
    return found


def main(packages: list[str]) -> int:
    roots = [SRC / PROJECT / package for package in packages] or [SRC / PROJECT]
    found = [use for root in roots for path in sorted(root.rglob("*.py"))
             for use in private_uses(path)]
    print("\n".join(found) if found else "no private names used across modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
