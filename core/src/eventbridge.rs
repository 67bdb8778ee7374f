//! Amazon S3 events delivered by Amazon EventBridge, read into events: the rules of
//! `seqgate/connectors/parsers/s3/eventbridge.py` and the field limits, for the events
//! those rules accept with a sequencer.
//!
//! Anything else is handed back (`Refused`) to the Python parser, which words every
//! rejection: another `source` or envelope `version`, an unsupported `detail-type` or
//! `deletion-type`, a missing or malformed member, an event without a sequencer (the
//! restore, tag and ACL types may lack one), any field beyond its limit.

use std::borrow::Cow;

use crate::avro::{Read, Refused};
use crate::json::Value;
use crate::order::Order;
use crate::s3::{lowercase, object, optional_size, optional_string, Rules, S3Event};

const EVENT_SOURCE: &str = "aws.s3";
const ENVELOPE_VERSION: &str = "0";
const OBJECT_DELETED: &str = "Object Deleted";
const DELETE_MARKER_CREATED: &str = "Delete Marker Created";
const PERMANENTLY_DELETED: &str = "Permanently Deleted";

/// What `eventbridge.py` maps to kinds, given by Python: `EVENTBRIDGE_KINDS` (every
/// supported `detail-type` but `Object Deleted`) and the two kinds of a deletion.
#[derive(Debug, Clone, Default)]
pub struct Kinds {
    pub by_detail_type: Vec<(String, String)>,
    pub removed: String,
    pub version_removed: String,
}

impl Rules {
    /// The event of one EventBridge document, when Python makes it with a sequencer.
    pub fn eventbridge_event<'a>(&'a self, event: &'a Value<'a>) -> Read<S3Event<'a>> {
        let event = object(Some(event))?;
        if text(event.get("source")) != Some(EVENT_SOURCE)
            || text(event.get("version")) != Some(ENVELOPE_VERSION)
        {
            return Err(Refused);
        }
        let detail_type = text(event.get("detail-type")).ok_or(Refused)?;
        let id = non_empty(event.get("id"))?;
        let detail = object(event.get("detail"))?;
        if !accepts_event_version(detail.get("event-version")) {
            return Err(Refused);
        }
        let bucket = match non_empty(object(detail.get("bucket"))?.get("name"))? {
            name if name.contains('/') => return Err(Refused),
            name => name,
        };
        let obj = object(detail.get("object"))?;
        // The key is the object's name as it is: never form-decoded.
        let key = non_empty(obj.get("key"))?;
        let sequencer = match obj.get("sequencer") {
            Some(Value::Str(text)) if Order::Aws.check(text).is_ok() => text.as_ref(),
            _ => return Err(Refused),
        };
        let version_id = optional_string(obj.get("version-id"))?;
        let kind = if detail_type == OBJECT_DELETED {
            match text(detail.get("deletion-type")) {
                Some(DELETE_MARKER_CREATED) => self.eventbridge.removed.as_str(),
                Some(PERMANENTLY_DELETED) if version_id.is_some() => {
                    self.eventbridge.version_removed.as_str()
                }
                Some(PERMANENTLY_DELETED) => self.eventbridge.removed.as_str(),
                _ => return Err(Refused),
            }
        } else {
            self.eventbridge
                .by_detail_type
                .iter()
                .find(|(name, _)| name == detail_type)
                .map(|(_, kind)| kind.as_str())
                .ok_or(Refused)?
        };
        let size = optional_size(obj.get("size"))?;
        let etag = optional_string(obj.get("etag"))?;
        let event_time = optional_string(event.get("time"))?;
        let position = lowercase(sequencer);
        self.fitting(S3Event {
            id: Cow::Borrowed(id),
            bucket,
            key: Cow::Borrowed(key),
            kind,
            event_name: detail_type,
            position,
            version_id,
            size,
            etag,
            event_time,
        })
    }
}

fn text<'v>(value: Option<&'v Value<'_>>) -> Option<&'v str> {
    value.and_then(Value::as_str)
}

/// `json_fields.required_string`: a non-empty string.
fn non_empty<'v>(value: Option<&'v Value<'_>>) -> Read<&'v str> {
    match text(value) {
        Some(text) if !text.is_empty() => Ok(text),
        _ => Err(Refused),
    }
}

/// `_check_event_version`: absent, null, or `1.<ASCII digits>`.
fn accepts_event_version(version: Option<&Value<'_>>) -> bool {
    match version {
        None | Some(Value::Null) => true,
        Some(Value::Str(text)) => text
            .strip_prefix("1.")
            .is_some_and(|minor| !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit())),
        Some(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::s3::tests::rules;

    fn document(detail_type: &str, object: &str, extra_detail: &str) -> String {
        format!(
            r#"{{"version":"0","id":"17793124-05d4-b198-2fde-7ededc63b103","detail-type":"{detail_type}","source":"aws.s3","account":"1","time":"2026-06-01T12:00:00Z","region":"us-east-1","resources":[],"detail":{{"version":"0","bucket":{{"name":"b"}},"object":{object}{extra_detail}}}}}"#
        )
    }

    /// (id, key, kind, event name, position, version id) of the event, or None.
    type Seen = (String, String, String, String, String, Option<String>);

    fn read(text: &str) -> Option<Seen> {
        let rules = rules();
        let document = crate::json::parse(text, 64).ok()?;
        let event = rules.eventbridge_event(&document).ok()?;
        Some((
            event.id.into_owned(),
            event.key.into_owned(),
            event.kind.to_owned(),
            event.event_name.to_owned(),
            event.position.into_owned(),
            event.version_id.map(str::to_owned),
        ))
    }

    #[test]
    fn a_created_object_is_read_with_its_own_id_and_a_verbatim_key() {
        let text = document(
            "Object Created",
            r#"{"key":"a+b%20c","size":5,"etag":"e","sequencer":"00AB"}"#,
            "",
        );
        let (id, key, kind, name, position, version) = read(&text).unwrap();
        assert_eq!(id, "17793124-05d4-b198-2fde-7ededc63b103");
        assert_eq!(key, "a+b%20c");
        assert_eq!(
            (kind.as_str(), name.as_str()),
            ("created", "Object Created")
        );
        assert_eq!((position.as_str(), version), ("00ab", None));
    }

    #[test]
    fn a_deletion_is_a_removal_or_a_version_removal() {
        let kind = |deletion: &str, object: &str| {
            let extra = format!(r#","deletion-type":"{deletion}""#);
            read(&document("Object Deleted", object, &extra)).map(|seen| seen.2)
        };
        let plain = r#"{"key":"k","sequencer":"1"}"#;
        let versioned = r#"{"key":"k","version-id":"v","sequencer":"1"}"#;
        assert_eq!(
            kind("Delete Marker Created", versioned).as_deref(),
            Some("removed")
        );
        assert_eq!(
            kind("Permanently Deleted", plain).as_deref(),
            Some("removed")
        );
        assert_eq!(
            kind("Permanently Deleted", versioned).as_deref(),
            Some("version_removed")
        );
        assert_eq!(kind("Expired", plain), None);
        assert_eq!(read(&document("Object Deleted", plain, "")), None);
    }

    #[test]
    fn hands_back_what_python_rejects_or_reads_without_a_sequencer() {
        let clean = r#"{"key":"k","sequencer":"1"}"#;
        assert!(read(&document("Object Created", clean, "")).is_some());
        assert!(read(&document("Object Tags Added", clean, "")).is_some());
        for text in [
            document("Object Created", r#"{"key":"k"}"#, ""),
            document("Object Restore Completed", r#"{"key":"k"}"#, ""),
            document("Object Created", r#"{"key":"","sequencer":"1"}"#, ""),
            document("Object Created", r#"{"key":"k","sequencer":"x"}"#, ""),
            document(
                "Object Created",
                r#"{"key":"k","sequencer":"1","size":-1}"#,
                "",
            ),
            document(
                "Object Created",
                r#"{"key":"k","sequencer":"1","etag":1}"#,
                "",
            ),
            document("Object Created", clean, r#","event-version":"2.0""#),
            document("Object Created", clean, r#","event-version":"1.""#),
            document("Object Created", clean, r#","event-version":1"#),
            document("Object Renamed", clean, ""),
            document("Object Created", clean, "").replace("aws.s3", "aws.s3x"),
            document("Object Created", clean, "")
                .replace(r#""version":"0","id""#, r#""version":"1","id""#),
            document("Object Created", clean, "").replace(r#""name":"b""#, r#""name":"a/b""#),
        ] {
            assert_eq!(read(&text), None, "{text}");
        }
        let versioned = document("Object Created", clean, r#","event-version":"1.0""#);
        assert!(read(&versioned).is_some());
    }
}
