"""The product's payload converter: pydantic JSON, with one type-adapter cache for the whole process.

temporalio's `PydanticPayloadConverter` keeps its `TypeAdapter` cache per converter
instance, and the worker builds a new converter for every workflow run (inside the
sandbox), so every run built the adapters of every payload type again: a pydantic
schema build per type per run, most of the converter's cost in a short run. Payload
types are module-level classes, so one cache shared by all instances is correct and
makes a converter free to create.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import SchemaSerializer, core_schema
from temporalio.contrib.pydantic import PydanticJSONPlainPayloadConverter
from temporalio.converter import CompositePayloadConverter, DefaultPayloadConverter, JSONPlainPayloadConverter

_TYPE_ADAPTERS = functools.lru_cache(maxsize=1024)(TypeAdapter[Any])
_ANY_SERIALIZER = SchemaSerializer(core_schema.any_schema())


class SharedCachePydanticJSONConverter(PydanticJSONPlainPayloadConverter):
    """`PydanticJSONPlainPayloadConverter` whose type adapters are shared by every instance."""

    def __init__(self) -> None:
        """Share the process-wide adapter cache instead of building one per instance."""
        self._to_json_options = None
        self._schema_serializer = _ANY_SERIALIZER
        self._type_adapter = _TYPE_ADAPTERS


class ProductPayloadConverter(CompositePayloadConverter):
    """Temporal's default converters, with JSON handled by `SharedCachePydanticJSONConverter`."""

    def __init__(self) -> None:
        """Compose the default converters."""
        json_converter = SharedCachePydanticJSONConverter()
        super().__init__(
            *(
                json_converter if isinstance(c, JSONPlainPayloadConverter) else c
                for c in DefaultPayloadConverter.default_encoding_payload_converters
            )
        )
