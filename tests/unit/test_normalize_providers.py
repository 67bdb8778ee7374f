"""The generic normalizer recognizes every provider whose body names its format.

`seqgate parse`, the file, SQS and Kafka bridges call `normalize` without saying
what they received; each provider fixture must come out exactly as the provider's
own parser (what its HTTP route uses) makes it. Cloudinary and Appwrite bodies do
not say where they come from (the cloud name, the action header), so they are
served by their routes only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from seqgate.connectors.parsers.azure import parse_azure
from seqgate.connectors.parsers.b2 import parse_b2
from seqgate.connectors.parsers.box import parse_box
from seqgate.connectors.parsers.gcs import parse_gcs
from seqgate.connectors.parsers.normalize import normalize, normalize_with
from seqgate.connectors.parsers.results import ParseResult
from seqgate.connectors.parsers.supabase import parse_supabase
from tests.support.paths import FIXTURES

PARSERS: dict[str, Callable[[object, str], ParseResult]] = {
    "gcs": parse_gcs,
    "azure": parse_azure,
    "supabase": parse_supabase,
    "b2": parse_b2,
    "box": parse_box,
}
CASES = [
    pytest.param(provider, path, id=f"{provider}/{path.name}")
    for provider in PARSERS
    for path in sorted((FIXTURES / provider).glob("*.json"))
]


@pytest.mark.parametrize(("provider", "path"), CASES)
def test_the_generic_normalizer_matches_the_provider_parser(provider: str, path: Path) -> None:
    raw = path.read_bytes()
    generic = normalize(raw, "file:x")
    own = normalize_with(raw, "file:x", PARSERS[provider])
    if [r.reason for r in own.rejections] == ["not_a_notification"] and len(own) == 1:
        # Not this provider's notification: unrecognized by the generic one either.
        assert [r.reason for r in generic.rejections] == ["not_a_notification"]
    else:
        assert generic == own


def test_every_provider_has_fixtures() -> None:
    counts = {provider: len(list((FIXTURES / provider).glob("*.json"))) for provider in PARSERS}
    assert all(count >= 3 for count in counts.values()), counts


def test_a_recognized_provider_body_is_never_not_a_notification() -> None:
    raw = (FIXTURES / "b2" / "object_created_upload.json").read_bytes()
    (event,) = normalize(raw, "file:x").events
    assert (event.source, event.kind) == ("b2", "created")


def test_malformed_json_through_a_provider_route_is_malformed_json() -> None:
    result = normalize_with(b'{"events": [', "http:b2", parse_b2)
    (rejection,) = result.rejections
    assert rejection.reason == "malformed_json"


def test_every_ignored_reason_of_the_fixtures_is_documented() -> None:
    from seqgate.connectors.parsers.appwrite import parse_appwrite
    from seqgate.connectors.parsers.cloudinary import parse_cloudinary

    documented = (FIXTURES.parent.parent / "docs" / "reasons.md").read_text(encoding="utf-8")
    reasons: set[str] = set()
    for path in FIXTURES.rglob("*.json"):
        raw = path.read_bytes()
        results = [normalize(raw, "file:x")]
        if path.parent.name == "cloudinary":
            results.append(
                normalize_with(raw, "x", lambda d, o: parse_cloudinary(d, o, cloud_name="c"))
            )
        if path.parent.name == "appwrite":
            results.append(normalize_with(raw, "x", lambda d, o: parse_appwrite(d, o, events="")))
        reasons |= {item.reason for result in results for item in result.ignored}
    assert {"b2_test_event", "azure_subscription_validation"} <= reasons
    missing = sorted(reason for reason in reasons if f"`{reason}`" not in documented)
    assert missing == [], f"ignored reasons missing from docs/reasons.md: {missing}"
