"""A schema registry in a dict, for broker-free tests of what is written in the Confluent
wire format: what `seqgate.schemas.framing.Framing` asks of a registry, ids given from 1
in the order schemas are first seen (one id per schema, whatever the topic)."""

from __future__ import annotations


class MemoryRegistry:
    def __init__(self) -> None:
        self.schemas: dict[int, str] = {}

    def schema_id(self, topic: str, schema_name: str, schema_json: str) -> int:
        for schema_id, known in self.schemas.items():
            if known == schema_json:
                return schema_id
        self.schemas[len(self.schemas) + 1] = schema_json
        return len(self.schemas)

    def schema_json(self, schema_id: int) -> str:
        try:
            return self.schemas[schema_id]
        except KeyError:
            raise LookupError(schema_id) from None
