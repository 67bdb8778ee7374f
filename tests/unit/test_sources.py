"""The `source` values (seqgate/schemas/sources.py): one per parser, written as plain str."""

from __future__ import annotations

from seqgate.connectors.parsers.providers import PROVIDERS
from seqgate.schemas import sources
from seqgate.schemas.sources import KNOWN_SOURCES, MINIO_SOURCE, S3_SOURCE, Source


def test_the_known_sources_are_the_enum() -> None:
    assert {source.value for source in Source} == KNOWN_SOURCES
    assert all(type(source) is str for source in KNOWN_SOURCES)


def test_every_source_has_its_plain_str_name() -> None:
    # The parsers write these; the codec takes only exact str values.
    for source in Source:
        plain_name = getattr(sources, f"{source.name}_SOURCE")
        assert type(plain_name) is str
        assert plain_name == source.value


def test_one_source_per_parser() -> None:
    assert {S3_SOURCE, MINIO_SOURCE, *PROVIDERS} == KNOWN_SOURCES
