"""The answers of ``verify_bearer_token``: the status and the message of each refusal."""

from __future__ import annotations

import pytest

from seqgate.connectors.auth.bearer_token import verify_bearer_token
from seqgate.connectors.errors import WebhookAuthError


@pytest.mark.parametrize(
    ("headers", "status", "message"),
    [
        ({}, 401, "Authorization header missing"),
        ({"Authorization": "Basic c2VjcmV0"}, 401, "Authorization is not a Bearer token"),
        ({"Authorization": "Bearer other"}, 403, "Bearer token does not match"),
    ],
)
def test_each_refusal_has_its_status_and_message(
    headers: dict[str, str], status: int, message: str
) -> None:
    with pytest.raises(WebhookAuthError) as raised:
        verify_bearer_token(headers, "secret")
    assert (raised.value.status, raised.value.message, str(raised.value)) == (
        status,
        message,
        message,
    )
