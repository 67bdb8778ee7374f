"""Splitting files into messages: one JSON document, or JSON Lines."""

from __future__ import annotations

from seqgate.connectors.sources.files import split_messages


def test_a_pretty_printed_document_is_one_message() -> None:
    data = b'\n\n{\n  "Records": []\n}\n'
    messages = list(split_messages(data, "doc.json"))
    assert [m.origin for m in messages] == ["file:doc.json:3"]
    assert messages[0].raw == b'{\n  "Records": []\n}'


def test_json_lines_keep_exact_bytes_and_line_numbers() -> None:
    data = b'{"a": 1}\n\n{not json\r\n{"b": 2}'
    messages = list(split_messages(data, "x.jsonl"))
    assert [(m.raw, m.origin) for m in messages] == [
        (b'{"a": 1}', "file:x.jsonl:1"),
        (b"{not json", "file:x.jsonl:3"),
        (b'{"b": 2}', "file:x.jsonl:4"),
    ]


def test_an_empty_file_has_no_messages() -> None:
    assert list(split_messages(b"  \n", "empty")) == []
