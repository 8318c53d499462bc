"""Typed payloads: the type a handler declares for its tasks' payloads, a dataclass or, where
pydantic is installed, a pydantic model (`@handler("send_welcome", payload_type=Welcome)`).

The client checks a payload against it at enqueue (`client.enqueue(send_welcome, Welcome(...))`,
pyworker.client's dump_payload) and the worker at run, before the handler gets the typed object. A payload that does not fit
raises PayloadMismatch, naming the field; at run that fails the attempt for good (a payload does
not change between retries).

A dataclass is read with dacite (strict: a missing field, a field of the wrong type and a key the
class has not are each refused by name), which keeps pydantic an optional dependency; a JSON
integer is accepted where a float is declared, as JSON does not tell them apart.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from typing import Any

import dacite

from pyworker.errors import ConfigurationError

# JSON has one number type: 5 is a fine value of a float field.
_DACITE_CONFIG = dacite.Config(
    strict=True,
    type_hooks={float: lambda value: float(value) if type(value) is int else value},
)


class PayloadMismatch(ValueError):
    """A payload does not fit the payload type its role's handler declares."""


def is_pydantic_model(payload_type: Any) -> bool:
    """Whether `payload_type` is a pydantic model class (never imports pydantic: a model exists
    only where pydantic was imported already)."""
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(payload_type, type) and issubclass(payload_type, pydantic.BaseModel)


def check_payload_type(payload_type: Any, role: str) -> None:
    """ConfigurationError unless `payload_type` is a dataclass or a pydantic model class."""
    if not (isinstance(payload_type, type) and (dataclasses.is_dataclass(payload_type) or is_pydantic_model(payload_type))):
        raise ConfigurationError(
            f"@handler({role!r}): payload_type must be a dataclass or a pydantic model class, not {payload_type!r}"
        )


def load(payload_type: type, payload: Any) -> Any:
    """The task's JSON payload as an instance of `payload_type`; PayloadMismatch naming the field
    that does not fit."""
    name = payload_type.__name__
    if not isinstance(payload, Mapping):
        raise PayloadMismatch(f"the payload does not fit {name}: a JSON object is needed, not {type(payload).__name__}")
    if is_pydantic_model(payload_type):
        pydantic = sys.modules["pydantic"]
        try:
            return payload_type.model_validate(dict(payload))
        except pydantic.ValidationError as error:
            problems = "; ".join(
                f"field {'.'.join(map(str, problem['loc'])) or '(the payload)'}: {problem['msg']}"
                for problem in error.errors()
            )
            raise PayloadMismatch(f"the payload does not fit {name}: {problems}") from error
    try:
        return dacite.from_dict(payload_type, dict(payload), config=_DACITE_CONFIG)
    except dacite.DaciteError as error:
        raise PayloadMismatch(f"the payload does not fit {name}: {error}") from error
