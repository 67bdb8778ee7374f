"""The outbox dispatcher (`seqgate dispatch`): applies accepted events to a destination
with an atomic per-identity version comparison (docs/dispatch.md).

`keys` (pure: version keys), `destinations` (SQLite, PostgreSQL, HTTP), `runner` (the
Kafka loop: consume, apply, reject, commit).
"""
