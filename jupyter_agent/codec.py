"""The one JSON codec of the project's frozen dataclasses, derived from their types.

:func:`dump` and :func:`load` go through a pydantic ``TypeAdapter`` per type (built once,
cached). Nothing is mapped field by field: what a type looks like on the wire follows from
its declaration.

Contract:

- ``dump(value)`` returns plain JSON values (dict, list, str, int, float, bool, None): each
  dataclass field under its wire name, **in declaration order** (so a type's field order
  is its wire order); tuples become lists; a float field holding an int writes a float;
  values typed ``Any`` (``provider_state``, a request body) pass through with their keys,
  order and strings unchanged (lone surrogates included).
- ``load(cls, data)`` builds the value from those JSON values (as ``json.loads`` gives
  them): keys are read by wire name, unknown keys are ignored, missing ones take the
  field's default; bad data raises ``ValueError`` (pydantic's ``ValidationError``).
  ``load(cls, data, by_name=True)`` reads Python field names instead (config values,
  database rows).
- Wire names: a field's own name, unless the class is decorated :func:`camel_case`
  (``user_text`` -> ``userText``; ids such as ``chat_id`` keep their name, as in the REST
  API) or the field says ``field(metadata=wire("in"))`` (wins over the class rule).
- ``field(default=None, metadata=OMIT_NONE)``: the key is left out while the value is None.
- ``Base64Bytes``: bytes in Python, standard base64 text (padded) on the wire.
- A union tagged by a literal field (``type: Literal["text"] = field(default="text",
  init=False)``) is read by that tag: ``Annotated[A | B, tagged("type")]``.
- A field with ``init=False`` is written but never read: ``__post_init__`` computes it.

A type needs no import of pydantic for most of this: aliases and omissions travel in plain
``dataclasses.field`` metadata, which pydantic reads.

Converting a type: declare its fields in wire order (keyword-only dataclasses allow a
default before a required field), name the exceptions with ``wire``/``OMIT_NONE``, and let
``to_json``/``from_json`` return ``dump_dict(self)`` / ``load(cls, data)``. Pin the old
bytes first (``tests/golden``).
"""

from __future__ import annotations

import base64
import dataclasses
import re
from collections.abc import Callable, Iterable
from functools import cache, partial
from typing import Annotated, Any, Final, TypeVar

from pydantic import ConfigDict, Field, PlainSerializer, PlainValidator, TypeAdapter

__all__ = [
    "OMIT_NONE",
    "Base64Bytes",
    "adapter",
    "camel_case",
    "dump",
    "dump_dict",
    "load",
    "snake",
    "tagged",
    "warm",
    "wire",
    "wire_name",
    "wire_names",
]

T = TypeVar("T")
C = TypeVar("C", bound=type)


def _is_none(value: Any) -> bool:
    return value is None


#: Field metadata: leave the key out while the value is None.
OMIT_NONE: Final = {"exclude_if": _is_none}


def wire(name: str, **more: Any) -> dict[str, Any]:
    """Field metadata naming the field's wire key (``field(default=0, metadata=wire("in"))``)."""
    return {"alias": name, **more}


def wire_name(name: str) -> str:
    """The camelCase wire name of a snake_case field; ids (``id``, ``*_id``) keep theirs."""
    if name == "id" or name.endswith("_id"):
        return name
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel_case(cls: C) -> C:
    """Class decorator: the class's fields travel under :func:`wire_name` names."""
    # pydantic reads a stdlib dataclass's own config from this attribute.
    cls.__pydantic_config__ = ConfigDict(alias_generator=wire_name)  # type: ignore[attr-defined]
    return cls


def tagged(key: str = "type") -> Any:
    """``Annotated`` metadata: read a union of dataclasses by their literal ``key`` field."""
    return Field(discriminator=key)


def _b64decode(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str):
        raise ValueError("expected base64 text")
    return base64.b64decode(value, validate=True)


def _b64encode(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


#: bytes in Python, standard padded base64 on the wire (strict: other characters fail).
Base64Bytes = Annotated[
    bytes, PlainValidator(_b64decode), PlainSerializer(_b64encode, return_type=str)
]


@cache
def adapter(tp: Any) -> TypeAdapter[Any]:
    """The cached TypeAdapter of a type (a class, or a hashable type expression)."""
    return TypeAdapter(tp)


# pydantic-core's own entry points, looked up once per type: TypeAdapter's Python-level
# wrappers cost more than the encoding itself for the small values here.
_ENCODERS: dict[Any, Callable[[Any], Any]] = {}
_DECODERS: dict[tuple[Any, bool], Callable[[Any], Any]] = {}


def _encoder(tp: Any) -> Callable[[Any], Any]:
    to_python = adapter(tp).serializer.to_python

    def encode(value: Any) -> Any:
        return to_python(value, mode="json", by_alias=True, warnings=False)

    _ENCODERS[tp] = encode
    return encode


def _decoder(tp: Any, by_name: bool) -> Callable[[Any], Any]:
    validate = adapter(tp).validator.validate_python
    decode = partial(validate, by_alias=False, by_name=True) if by_name else validate
    _DECODERS[tp, by_name] = decode
    return decode


def warm(dumped: Iterable[Any] = (), loaded: Iterable[tuple[Any, bool]] = ()) -> None:
    """Build now the encoders of the types ``dumped`` and the decoders of ``loaded`` (each
    ``(type, by_name)``), which pydantic otherwise builds at their first use: a few ms a
    type (blocking: the server calls it in a worker thread once it listens)."""
    for tp in dumped:
        if tp not in _ENCODERS:
            _encoder(tp)
    for tp, by_name in loaded:
        if (tp, by_name) not in _DECODERS:
            _decoder(tp, by_name)


def dump(value: Any, tp: Any = None) -> Any:
    """``value`` as JSON values with wire names (see the module doc).

    ``tp`` is the declared type when it is not ``type(value)`` (a union such as ``Part``).
    """
    key = type(value) if tp is None else tp
    encode = _ENCODERS.get(key) or _encoder(key)
    return encode(value)


def dump_dict(value: Any) -> dict[str, Any]:
    """:func:`dump` of a dataclass: its JSON object (what ``to_json`` methods return)."""
    data: dict[str, Any] = dump(value)
    return data


def load(tp: type[T] | Any, data: Any, *, by_name: bool = False) -> T:
    """A ``tp`` built from JSON values read by wire name (``by_name``: by field name)."""
    decode = _DECODERS.get((tp, by_name)) or _decoder(tp, by_name)
    value: T = decode(data)
    return value


def wire_names(cls: type) -> dict[str, str]:
    """Field name -> wire key of a dataclass, in declaration order (init fields only)."""
    config: Any = getattr(cls, "__pydantic_config__", None) or {}
    generate = config.get("alias_generator") or (lambda name: name)
    return {
        f.name: f.metadata.get("alias") or generate(f.name)
        for f in dataclasses.fields(cls)
        if f.init
    }


_SNAKE: Final = re.compile(r"(?<!^)(?=[A-Z])")


def snake(name: str) -> str:
    """``cacheRead`` -> ``cache_read`` (for column names derived from wire names)."""
    return _SNAKE.sub("_", name).lower()
