//! Native Amazon S3 notifications (a `Records` document of `aws:s3` records) read into
//! events, the rules of `seqgate/connectors/parsers/records_document.py`, `s3/native.py`,
//! `s3/object_keys.py`, `s3/event_ids.py` and the field limits, for the documents where
//! every record becomes an event (their envelopes: `envelopes.rs`).
//!
//! Anything else is handed back (`Refused`) to those Python parsers, which stay the
//! specification and word every rejection: a record they would reject, an ignored test
//! event, MinIO's records, a record without a sequencer (its fallback id hashes the whole
//! record), any field beyond its limit.

use std::borrow::Cow;

use sha2::{Digest, Sha256};

use crate::avro::{Read, Refused};
use crate::event::texts_fit;
use crate::eventbridge::Kinds;
use crate::json::Value;
use crate::order::Order;

/// One Amazon S3 event name (`s3/event_names.py`'s `S3EventName`), given by Python.
#[derive(Debug, Clone)]
pub struct Name {
    pub name: String,
    pub kind: String,
    pub versioned_kind: Option<String>,
}

impl Name {
    fn kind_for(&self, version_id: Option<&str>) -> &str {
        match (version_id, &self.versioned_kind) {
            (Some(_), Some(versioned)) => versioned,
            _ => &self.kind,
        }
    }
}

/// What a bridge's `S3ParseOptions` and the contract's field limits say. Whether a
/// sequencer may be missing does not matter here: a record without one is handed back.
#[derive(Debug, Clone)]
pub struct Rules {
    pub names: Vec<Name>,
    /// `--s3-schema-floor 2.0`: every `2.x`; else `2.x` with x >= 1.
    pub floor_two_zero: bool,
    /// `limits.TEXT_LIMITS`, in its (the schema's) order.
    pub text_limits: [usize; 11],
    /// The kinds of EventBridge's `detail-type`s (`eventbridge.rs`).
    pub eventbridge: Kinds,
}

/// One event, its fields borrowed from the document and the rules where they can be;
/// `source` is always `s3`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Event<'a> {
    pub id: Cow<'a, str>,
    pub bucket: &'a str,
    pub key: Cow<'a, str>,
    pub kind: &'a str,
    pub event_name: &'a str,
    pub position: Cow<'a, str>,
    pub version_id: Option<&'a str>,
    pub size: Option<i64>,
    pub etag: Option<&'a str>,
    pub event_time: Option<&'a str>,
}

pub const SOURCE: &str = "s3";
const EVENT_SOURCE: &str = "aws:s3";
const ID_PREFIX: &str = "s3-";

impl Rules {
    /// The events of a native S3 document, one per record, when Python makes an event of
    /// every record (the origin's limit is checked once per body, `envelopes.rs`).
    pub fn events<'a>(&'a self, document: &'a Value<'a>) -> Read<Vec<S3Event<'a>>> {
        // normalize.py tries `Records`/`Event` first; `Event` (s3:TestEvent) goes back.
        if document.get("Event").is_some() {
            return Err(Refused);
        }
        let Some(Value::Array(records)) = document.get("Records") else {
            return Err(Refused);
        };
        if records.is_empty() {
            return Err(Refused);
        }
        records.iter().map(|record| self.event(record)).collect()
    }

    fn event<'a>(&'a self, record: &'a Value<'a>) -> Read<S3Event<'a>> {
        if !matches!(record, Value::Object(_)) {
            return Err(Refused);
        }
        // records_document.py: Lambda SQS and SNS records are envelopes, handed back too.
        if record.get("eventSource").and_then(Value::as_str) != Some(EVENT_SOURCE) {
            return Err(Refused);
        }
        if record.get("EventSource").and_then(Value::as_str) == Some("aws:sns") {
            return Err(Refused);
        }
        if !self.accepts_version(record.get("eventVersion").and_then(Value::as_str)) {
            return Err(Refused);
        }
        let name_text = record.get("eventName").and_then(Value::as_str);
        let name = self
            .names
            .iter()
            .find(|name| Some(name.name.as_str()) == name_text)
            .ok_or(Refused)?;
        let s3 = object(record.get("s3"))?;
        let bucket = match object(s3.get("bucket"))?.get("name") {
            Some(Value::Str(name)) if !name.is_empty() && !name.contains('/') => name.as_ref(),
            _ => return Err(Refused),
        };
        let obj = object(s3.get("object"))?;
        let key = match obj.get("key") {
            Some(Value::Str(raw)) if !raw.is_empty() => decode_form_key(raw)?,
            _ => return Err(Refused),
        };
        // A record without a sequencer (allowed or not) is Python's: its id hashes it.
        let sequencer = match obj.get("sequencer") {
            Some(Value::Str(text)) if Order::Aws.check(text).is_ok() => text.as_ref(),
            _ => return Err(Refused),
        };
        let version_id = optional_string(obj.get("versionId"))?;
        let size = optional_size(obj.get("size"))?;
        let etag = optional_string(obj.get("eTag"))?;
        let event_time = optional_string(record.get("eventTime"))?;
        let kind = name.kind_for(version_id);
        let position = lowercase(sequencer);
        let canonical = Order::Aws.canonical(sequencer)?;
        self.fitting(S3Event {
            id: Cow::Owned(event_id(kind, bucket, &key, &canonical)),
            bucket,
            key,
            kind,
            event_name: &name.name,
            position,
            version_id,
            size,
            etag,
            event_time,
        })
    }

    /// `native._check_version` for `aws:s3`: `2.<digits>`, the minor not all zeros
    /// unless the floor is 2.0.
    fn accepts_version(&self, version: Option<&str>) -> bool {
        let Some(minor) = version.and_then(|text| text.strip_prefix("2.")) else {
            return false;
        };
        !minor.is_empty()
            && minor.bytes().all(|b| b.is_ascii_digit())
            && (self.floor_two_zero || minor.bytes().any(|b| b != b'0'))
    }

    /// `event`, if its fields fit their limits.
    pub(crate) fn fitting<'a>(&self, event: S3Event<'a>) -> Read<S3Event<'a>> {
        if self.within_limits(&event) {
            Ok(event)
        } else {
            Err(Refused)
        }
    }

    /// `limits.check_event`: the strings' UTF-8 lengths (the origin's is checked once).
    fn within_limits(&self, event: &S3Event<'_>) -> bool {
        let texts = [
            Some(event.id.as_ref()),
            Some(SOURCE),
            Some(event.bucket),
            Some(event.key.as_ref()),
            Some(event.kind),
            Some(event.event_name),
            Some(event.position.as_ref()),
            event.version_id,
            event.etag,
            event.event_time,
        ];
        texts_fit(&texts, &self.text_limits)
    }
}

/// The position of a hex sequencer: Python's `str.lower()`, which for ASCII hex is this.
pub(crate) fn lowercase(sequencer: &str) -> Cow<'_, str> {
    if sequencer.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(sequencer.to_ascii_lowercase())
    } else {
        Cow::Borrowed(sequencer)
    }
}

pub(crate) fn object<'v, 'a>(value: Option<&'v Value<'a>>) -> Read<&'v Value<'a>> {
    match value {
        Some(value @ Value::Object(_)) => Ok(value),
        _ => Err(Refused),
    }
}

/// `json_fields.optional_string`: absent, null or empty are None.
pub(crate) fn optional_string<'a>(value: Option<&'a Value<'a>>) -> Read<Option<&'a str>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Str(text)) if text.is_empty() => Ok(None),
        Some(Value::Str(text)) => Ok(Some(text.as_ref())),
        Some(_) => Err(Refused),
    }
}

/// `json_fields.optional_size`: absent or null, or an integer literal in 0..=2**63-1.
pub(crate) fn optional_size(value: Option<&Value<'_>>) -> Read<Option<i64>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(literal)) => {
            // Python reads `-0` as the integer 0; a fraction or exponent is a float.
            let digits = literal.strip_prefix('-').unwrap_or(literal);
            if literal.starts_with('-') && digits != "0" {
                return Err(Refused);
            }
            if !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(Refused);
            }
            digits.parse::<i64>().map(Some).map_err(|_| Refused)
        }
        Some(_) => Err(Refused),
    }
}

/// `identity.sequencer_event_id` with the `s3-` prefix, over the identity
/// `s3://<bucket>/<key>` (hashed in pieces, never built).
fn event_id(kind: &str, bucket: &str, key: &str, canonical: &[u8]) -> String {
    let mut hasher = Sha256::new();
    for piece in [kind, "\u{1f}", SOURCE, "://", bucket, "/", key, "\u{1f}"] {
        hasher.update(piece.as_bytes());
    }
    hasher.update(canonical);
    let digest = hasher.finalize();
    let mut id = String::with_capacity(ID_PREFIX.len() + 32);
    id.push_str(ID_PREFIX);
    for byte in &digest[..16] {
        id.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
        id.push(char::from_digit(u32::from(byte & 0xF), 16).unwrap_or('0'));
    }
    id
}

/// `object_keys.decode_form_key`: `+` is a space, `%XX` a byte, the result UTF-8.
fn decode_form_key(raw: &str) -> Read<Cow<'_, str>> {
    let bytes = raw.as_bytes();
    if !bytes.iter().any(|b| *b == b'%' || *b == b'+') {
        return Ok(Cow::Borrowed(raw));
    }
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'%' => {
                let digits = bytes.get(index + 1..index + 3).ok_or(Refused)?;
                let high = (digits[0] as char).to_digit(16).ok_or(Refused)?;
                let low = (digits[1] as char).to_digit(16).ok_or(Refused)?;
                decoded.push((high * 16 + low) as u8);
                index += 3;
            }
            b'+' => {
                decoded.push(b' ');
                index += 1;
            }
            byte => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8(decoded)
        .map(Cow::Owned)
        .map_err(|_| Refused)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    /// `json_fields.MAX_JSON_DEPTH`.
    fn parse(text: &str) -> Read<Value<'_>> {
        crate::json::parse(text, 64)
    }

    pub(crate) fn rules() -> Rules {
        Rules {
            names: vec![
                Name {
                    name: "ObjectCreated:Put".into(),
                    kind: "created".into(),
                    versioned_kind: None,
                },
                Name {
                    name: "ObjectRemoved:Delete".into(),
                    kind: "removed".into(),
                    versioned_kind: Some("version_removed".into()),
                },
            ],
            floor_two_zero: false,
            text_limits: [256, 32, 256, 4096, 64, 256, 128, 1024, 256, 64, 4352],
            eventbridge: Kinds {
                by_detail_type: vec![
                    ("Object Created".into(), "created".into()),
                    ("Object Tags Added".into(), "tags_changed".into()),
                ],
                removed: "removed".into(),
                version_removed: "version_removed".into(),
            },
        }
    }

    fn document(version: &str, name: &str, object: &str) -> String {
        format!(
            r#"{{"Records":[{{"eventVersion":"{version}","eventSource":"aws:s3","eventName":"{name}","eventTime":"2026-06-01T12:00:00.000Z","s3":{{"bucket":{{"name":"b"}},"object":{object}}}}}]}}"#
        )
    }

    /// What the assertions read of an event, owned.
    #[derive(Debug)]
    struct Seen {
        id: String,
        key: String,
        kind: String,
        position: String,
        size: Option<i64>,
        etag: Option<String>,
    }

    fn events(text: &str) -> Read<Vec<Seen>> {
        let rules = rules();
        let document = parse(text).map_err(|_| Refused)?;
        let events = rules.events(&document)?;
        Ok(events
            .into_iter()
            .map(|event| Seen {
                id: event.id.into_owned(),
                key: event.key.into_owned(),
                kind: event.kind.to_owned(),
                position: event.position.into_owned(),
                size: event.size,
                etag: event.etag.map(str::to_owned),
            })
            .collect())
    }

    #[test]
    fn a_clean_record_becomes_its_event() {
        let text = document(
            "2.1",
            "ObjectCreated:Put",
            r#"{"key":"a%2Fb+c%25","size":0,"eTag":"","sequencer":"00AB00"}"#,
        );
        let event = events(&text).unwrap().remove(0);
        assert_eq!(event.key, "a/b c%");
        assert_eq!(event.position, "00ab00");
        assert_eq!(event.size, Some(0));
        assert_eq!(event.etag, None);
        assert_eq!(event.kind, "created");
        // identity.sequencer_event_id("s3-", "created", "s3://b/a/b c%", "00ab")
        assert_eq!(event.id, "s3-d76acb418c3169831877cbeebbc89f56");
    }

    #[test]
    fn a_version_makes_a_delete_a_version_removal() {
        let text = document(
            "2.3",
            "ObjectRemoved:Delete",
            r#"{"key":"k","versionId":"v1","sequencer":"1"}"#,
        );
        assert_eq!(events(&text).unwrap()[0].kind, "version_removed");
    }

    #[test]
    fn hands_back_what_python_rejects_or_words() {
        let clean = r#"{"key":"k","sequencer":"1"}"#;
        let put = "ObjectCreated:Put";
        for version in ["2.0", "2.00", "2.", "3.1", "2.1 "] {
            assert!(events(&document(version, put, clean)).is_err(), "{version}");
        }
        for name in [
            "s3:ObjectCreated:Put",
            "ObjectCreated:*",
            "objectcreated:put",
        ] {
            assert!(events(&document("2.1", name, clean)).is_err(), "{name}");
        }
        for object in [
            r#"{"key":"k"}"#,
            r#"{"key":"k","sequencer":null}"#,
            r#"{"key":"k","sequencer":""}"#,
            r#"{"key":"k","sequencer":"x1"}"#,
            r#"{"key":"","sequencer":"1"}"#,
            r#"{"key":"%4","sequencer":"1"}"#,
            r#"{"key":"%C3","sequencer":"1"}"#,
            r#"{"key":"k","sequencer":"1","size":-1}"#,
            r#"{"key":"k","sequencer":"1","size":1.0}"#,
            r#"{"key":"k","sequencer":"1","size":true}"#,
            r#"{"key":"k","sequencer":"1","size":9223372036854775808}"#,
            r#"{"key":"k","sequencer":"1","eTag":1}"#,
        ] {
            assert!(events(&document("2.1", put, object)).is_err(), "{object}");
        }
        let long_sequencer = format!(r#"{{"key":"k","sequencer":"{}"}}"#, "1".repeat(129));
        assert!(events(&document("2.1", "ObjectCreated:Put", &long_sequencer)).is_err());
        for text in [
            r#"{"Records":[]}"#,
            r#"{"Records":{}}"#,
            r#"{"Event":"s3:TestEvent","Records":[]}"#,
            r#"{"Records":[{"eventSource":"aws:sqs","body":"{}"}]}"#,
            r#"[]"#,
        ] {
            assert!(events(text).is_err(), "{text} accepted");
        }
    }

    #[test]
    fn the_floor_two_zero_accepts_every_two_x() {
        let text = document("2.0", "ObjectCreated:Put", r#"{"key":"k","sequencer":"1"}"#);
        let lowered = Rules {
            floor_two_zero: true,
            ..rules()
        };
        assert!(lowered.events(&parse(&text).unwrap()).is_ok());
    }
}
