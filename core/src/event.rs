//! The input event, read without copying, and the checks `record_identity` makes before any
//! state is read (`seqgate/streams/rules/decider.py`, `seqgate/schemas/limits.py`,
//! `seqgate/schemas/identity.py`). The tables (limits, sources, schemes) come from Python
//! at construction: this module holds the rules, not a second copy of the contract.

use crate::avro::{Read, Reader, Refused};

/// One `ObjectEvent`, its strings borrowed from the record's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event<'a> {
    pub id: &'a str,
    pub source: &'a str,
    pub bucket: &'a str,
    pub key: &'a str,
    pub kind: &'a str,
    pub event_name: &'a str,
    pub position: Option<&'a str>,
    pub version_id: Option<&'a str>,
    pub size: Option<i64>,
    pub etag: Option<&'a str>,
    pub event_time: Option<&'a str>,
    pub origin: &'a str,
}

impl<'a> Event<'a> {
    /// The event in `body` (an Avro body written with the current schema), all of it.
    pub fn read(body: &'a [u8]) -> Read<Event<'a>> {
        let mut r = Reader::new(body, 0);
        let event = Event {
            id: r.string()?,
            source: r.string()?,
            bucket: r.string()?,
            key: r.string()?,
            kind: r.string()?,
            event_name: r.string()?,
            position: r.optional_string()?,
            version_id: r.optional_string()?,
            size: r.optional_long()?,
            etag: r.optional_string()?,
            event_time: r.optional_string()?,
            origin: r.string()?,
        };
        r.end()?;
        Ok(event)
    }

    /// The text fields in schema order (`limits.TEXT_LIMITS`'s order), None when unset.
    fn texts(&self) -> [Option<&'a str>; 11] {
        [
            Some(self.id),
            Some(self.source),
            Some(self.bucket),
            Some(self.key),
            Some(self.kind),
            Some(self.event_name),
            self.position,
            self.version_id,
            self.etag,
            self.event_time,
            Some(self.origin),
        ]
    }
}

/// What `record_identity` needs besides the event: the contract's tables.
pub struct Contract {
    /// Byte limits of the text fields, in the order of [`Event::texts`].
    pub text_limits: [usize; 11],
    pub known_sources: Vec<String>,
    /// (source, scheme) where a source's identity scheme is not its name.
    pub schemes: Vec<(String, String)>,
}

impl Contract {
    /// Every field within its limit: strings read from UTF-8 are text already, so only
    /// their lengths are left to check; a size must not be negative.
    pub fn within_limits(&self, event: &Event<'_>) -> bool {
        texts_fit(&event.texts(), &self.text_limits) && event.size.is_none_or(|size| size >= 0)
    }

    fn scheme_of<'s>(&'s self, source: &'s str) -> &'s str {
        self.schemes
            .iter()
            .find(|(from, _)| from == source)
            .map_or(source, |(_, scheme)| scheme.as_str())
    }

    /// The object identity `<scheme>://<bucket>/<key>` of a checked event; Refused where
    /// the Python rules would refuse the event (they word the reason).
    pub fn identity(&self, event: &Event<'_>) -> Read<String> {
        if !self.known_sources.iter().any(|known| known == event.source) {
            return Err(Refused);
        }
        if !self.within_limits(event) {
            return Err(Refused);
        }
        let scheme = self.scheme_of(event.source);
        if !valid_scheme(scheme) || event.bucket.is_empty() || event.bucket.contains('/') {
            return Err(Refused);
        }
        if event.key.is_empty() {
            return Err(Refused);
        }
        let mut identity =
            String::with_capacity(scheme.len() + 4 + event.bucket.len() + event.key.len());
        identity.push_str(scheme);
        identity.push_str("://");
        identity.push_str(event.bucket);
        identity.push('/');
        identity.push_str(event.key);
        Ok(identity)
    }
}

/// Whether each text field (in `limits.TEXT_LIMITS`'s order, None when unset) is at most
/// its limit in UTF-8 bytes (`limits.check_event`'s lengths).
pub fn texts_fit(texts: &[Option<&str>], limits: &[usize]) -> bool {
    texts
        .iter()
        .zip(limits)
        .all(|(text, limit)| text.is_none_or(|value| value.len() <= *limit))
}

/// `limits.TEXT_LIMITS`'s values as Python gives them, checked to be the 11 text fields'.
pub fn text_limits(limits: Vec<usize>) -> Result<[usize; 11], &'static str> {
    limits
        .try_into()
        .map_err(|_| "text_limits: expected the 11 text fields' limits")
}

/// `[a-z][a-z0-9+.-]*` (`identity._SCHEME`).
pub fn valid_scheme(scheme: &str) -> bool {
    let mut bytes = scheme.bytes();
    bytes.next().is_some_and(|first| first.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+.-".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avro::{write_long, write_optional_string, write_string};

    pub(crate) fn contract() -> Contract {
        Contract {
            text_limits: [256, 32, 256, 4096, 64, 256, 128, 1024, 256, 64, 4352],
            known_sources: ["s3", "minio", "gcs"].map(String::from).to_vec(),
            schemes: vec![("gcs".into(), "gs".into())],
        }
    }

    fn body(source: &str, bucket: &str, key: &str, size: Option<i64>) -> Vec<u8> {
        let mut out = Vec::new();
        for text in ["id-1", source, bucket, key, "created", "ObjectCreated:Put"] {
            write_string(&mut out, text);
        }
        write_optional_string(&mut out, Some("0A"));
        write_optional_string(&mut out, None);
        match size {
            None => out.push(0),
            Some(value) => {
                out.push(2);
                write_long(&mut out, value);
            }
        }
        write_optional_string(&mut out, None);
        write_optional_string(&mut out, Some("2026-12-06T00:00:00Z"));
        write_string(&mut out, "sqs:queue");
        out
    }

    #[test]
    fn an_event_reads_back_every_field() {
        let bytes = body("s3", "b", "dir/é", Some(7));
        let event = Event::read(&bytes).unwrap();
        assert_eq!(
            (event.bucket, event.key, event.size),
            ("b", "dir/é", Some(7))
        );
        assert_eq!(event.position, Some("0A"));
        assert_eq!(contract().identity(&event).unwrap(), "s3://b/dir/é");
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let mut bytes = body("s3", "b", "k", None);
        bytes.push(0);
        assert_eq!(Event::read(&bytes), Err(Refused));
    }

    #[test]
    fn gcs_objects_are_named_gs() {
        let bytes = body("gcs", "b", "k", None);
        let event = Event::read(&bytes).unwrap();
        assert_eq!(contract().identity(&event).unwrap(), "gs://b/k");
    }

    #[test]
    fn what_record_identity_refuses_is_refused() {
        for (source, bucket, key, size) in [
            ("ftp", "b", "k", None),
            ("s3", "", "k", None),
            ("s3", "a/b", "k", None),
            ("s3", "b", "", None),
            ("s3", "b", "k", Some(-1)),
        ] {
            let bytes = body(source, bucket, key, size);
            let event = Event::read(&bytes).unwrap();
            assert_eq!(
                contract().identity(&event),
                Err(Refused),
                "{source} {bucket} {key}"
            );
        }
        let long_key = "k".repeat(4097);
        let bytes = body("s3", "b", &long_key, None);
        assert_eq!(
            contract().identity(&Event::read(&bytes).unwrap()),
            Err(Refused)
        );
    }

    #[test]
    fn schemes_follow_the_uri_rule() {
        assert!(valid_scheme("s3") && valid_scheme("a+b.c-d"));
        assert!(!valid_scheme("") && !valid_scheme("3s") && !valid_scheme("S3"));
    }
}
