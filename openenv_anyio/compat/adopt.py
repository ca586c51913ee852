"""``adopt(cls)``: a typed client written for upstream, rebuilt on our base without editing it.

    from echo_env import EchoEnv                 # ships in the env's package; subclasses upstream's
    EchoEnv = openenv_anyio.compat.adopt(EchoEnv)   # MCPToolClient or EnvClient

Each class of ``cls``'s own line (the classes between it and upstream's base) is made again
with the same name, namespace and methods over the matching compat base: upstream's
``EnvClient`` -> :class:`EnvClient`, ``GenericEnvClient`` -> :class:`GenericEnvClient`,
``MCPClientBase`` / ``MCPToolClient`` -> :class:`MCPToolClient`. Methods keep working with
``super()`` (their ``__class__`` cell is pointed at the new class). Their module's imports
are left alone, so a ``_parse_result`` that builds upstream's ``StepResult`` still does; the
compat clients return whatever the hooks build. The original class is not changed.
"""

from __future__ import annotations

import types
import weakref
from typing import Any, Final

from .env_client import EnvClient
from .generic_client import GenericEnvClient
from .mcp_client import MCPToolClient

__all__ = ["adopt"]

#: upstream's client classes (by module and name) and the compat class each becomes
UPSTREAM_BASES: Final[dict[tuple[str, str], type]] = {
    ("openenv.core.env_client", "EnvClient"): EnvClient,
    ("openenv.core.generic_client", "GenericEnvClient"): GenericEnvClient,
    ("openenv.core.mcp_client", "MCPClientBase"): MCPToolClient,
    ("openenv.core.mcp_client", "MCPToolClient"): MCPToolClient,
}
_SKIPPED: Final = frozenset({"__dict__", "__weakref__", "_abc_impl", "__abstractmethods__", "__parameters__"})

_adopted: weakref.WeakKeyDictionary[type, type] = weakref.WeakKeyDictionary()


def _upstream_base(cls: type) -> type | None:
    return UPSTREAM_BASES.get((cls.__module__, cls.__qualname__))


def adopt(cls: type) -> type[Any]:
    """``cls`` (a subclass of upstream's EnvClient, GenericEnvClient or MCPToolClient) on our base."""
    if not isinstance(cls, type):
        raise TypeError(f"adopt() takes a client class, not {type(cls).__name__}")
    if issubclass(cls, EnvClient):
        return cls  # already on our base
    known = _adopted.get(cls)
    if known is not None:
        return known
    if not any(_upstream_base(klass) is not None for klass in cls.__mro__):
        raise TypeError(
            f"adopt() takes a subclass of upstream's EnvClient, GenericEnvClient or MCPToolClient; "
            f"{cls.__qualname__} is none of them"
        )
    rebuilt: dict[type, type] = {}
    for klass in reversed(cls.__mro__):
        compat = _upstream_base(klass)
        if compat is not None:
            rebuilt[klass] = compat
        elif any(base in rebuilt for base in klass.__bases__):
            rebuilt[klass] = _rebuild(klass, tuple(rebuilt.get(base, base) for base in klass.__bases__))
    adopted = rebuilt[cls]
    _adopted[cls] = adopted
    return adopted


def _rebuild(klass: type, bases: tuple[type, ...]) -> type:
    """``klass`` made again over ``bases``, its methods' ``__class__`` cells pointing at the copy."""
    bases = _without_redundant(bases)
    namespace = {name: value for name, value in klass.__dict__.items() if name not in _SKIPPED}
    new = types.new_class(klass.__name__, bases, {}, lambda ns: ns.update(namespace))
    for name, value in namespace.items():
        moved = _moved(value, klass, new)
        if moved is not value:
            setattr(new, name, moved)
    return new


def _without_redundant(bases: tuple[type, ...]) -> tuple[type, ...]:
    """``bases`` without a class another of them already derives from (a valid MRO)."""
    kept: list[type] = []
    for base in bases:
        if base in kept or any(other is not base and issubclass(other, base) for other in bases):
            continue
        kept.append(base)
    return tuple(kept)


def _moved(value: Any, old: type, new: type) -> Any:
    """``value`` (a function, or one wrapped by classmethod/staticmethod/property) bound to ``new``'s ``__class__``."""
    match value:
        case types.FunctionType():
            return _with_class_cell(value, old, new)
        case classmethod() | staticmethod():
            inner = _moved(value.__func__, old, new)
            return value if inner is value.__func__ else type(value)(inner)
        case property():
            parts = [
                _moved(part, old, new) if part is not None else None for part in (value.fget, value.fset, value.fdel)
            ]
            if all(a is b for a, b in zip(parts, (value.fget, value.fset, value.fdel))):
                return value
            return property(parts[0], parts[1], parts[2], value.__doc__)
        case _:
            return value


def _with_class_cell(function: types.FunctionType, old: type, new: type) -> types.FunctionType:
    code = function.__code__
    if "__class__" not in code.co_freevars or function.__closure__ is None:
        return function
    cells = tuple(
        types.CellType(new) if name == "__class__" and cell.cell_contents is old else cell
        for name, cell in zip(code.co_freevars, function.__closure__)
    )
    copy = types.FunctionType(code, function.__globals__, function.__name__, function.__defaults__, cells)
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__dict__.update(function.__dict__)
    copy.__qualname__ = function.__qualname__
    copy.__annotations__ = function.__annotations__
    copy.__doc__ = function.__doc__
    copy.__module__ = function.__module__
    return copy
