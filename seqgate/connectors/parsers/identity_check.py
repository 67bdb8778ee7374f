"""The object identity of an event a parser built from checked fields."""

from __future__ import annotations

from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.identity import object_identity
from seqgate.schemas.reasons import RejectReason

__all__ = ["checked_identity"]


def checked_identity(scheme: str, bucket: str, key: str, where: str | None) -> str:
    """The identity ``<scheme>://<bucket>/<key>`` of fields the parser has already checked.

    The parsers' checks exclude every ValueError of
    :func:`~seqgate.schemas.identity.object_identity`; one is still reported as
    ``invalid_field``, prefixed by ``where`` (the record's JSON path) unless None.
    """
    try:
        return object_identity(scheme, bucket, key)
    except ValueError as error:
        raise RecordRejected(
            RejectReason.INVALID_FIELD, str(error) if where is None else f"{where}: {error}"
        ) from None
