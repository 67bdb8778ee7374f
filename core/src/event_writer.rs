//! An `ObjectEvent` written as Avro by the core (`EventWriter`, for the bridges' publisher)
//! and the records `S3Reader` writes straight from what it read (`write_read_event`): the
//! bytes of `seqgate/schemas/avro_codec.py` and the identity of `seqgate/schemas/identity.py`,
//! or None for what the Python codec must write or refuse.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyString, PyType};

use crate::avro::{write_long, write_optional_string, write_string};
use crate::bridge::interned;
use crate::event::valid_scheme;
use crate::s3::{S3Event, SOURCE};

/// `OBJECT_EVENT`'s writer for one framing: `header` + the Avro body; and an event's
/// Kafka record, its identity (`identity.event_identity`) as the key.
#[pyclass(frozen)]
pub struct EventWriter {
    pub(crate) header: Vec<u8>,
    event_type: Py<PyType>,
    fields: Vec<Py<PyString>>,
    /// (source, scheme) where a source's identity scheme is not its name.
    pub(crate) schemes: Vec<(String, String)>,
}

#[pymethods]
impl EventWriter {
    #[new]
    #[pyo3(signature = (*, header, event_type, schemes))]
    fn new(
        py: Python<'_>,
        header: Vec<u8>,
        event_type: Bound<'_, PyType>,
        schemes: Vec<(String, String)>,
    ) -> Self {
        EventWriter {
            header,
            event_type: event_type.unbind(),
            fields: interned(py),
            schemes,
        }
    }

    /// The bytes of `event`, or None for what the Python codec must write or refuse: not
    /// exactly an `ObjectEvent`, a field of another type, a string that is not text, a
    /// size outside an Avro long.
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        event: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let mut out = Vec::with_capacity(self.header.len() + 256);
        Ok(self
            .write(py, event, &mut out)?
            .map(|_| PyBytes::new(py, &out)))
    }

    /// `(key, value)`: the event's identity `<scheme>://<bucket>/<key>` as UTF-8 and its
    /// bytes as `__call__` writes them; None where `__call__` says None, or where
    /// `object_identity` would refuse (an invalid scheme, an empty bucket or one with a
    /// `/`, an empty key).
    fn record<'py>(
        &self,
        py: Python<'py>,
        event: &Bound<'py, PyAny>,
    ) -> PyResult<Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
        let mut out = Vec::with_capacity(self.header.len() + 256);
        let Some([source, bucket, key]) = self.write(py, event, &mut out)? else {
            return Ok(None);
        };
        let texts = (exact_text(&source), exact_text(&bucket), exact_text(&key));
        let (Some(source), Some(bucket), Some(key)) = texts else {
            return Ok(None);
        };
        let Some(identity) = identity(&self.schemes, &source, &bucket, &key) else {
            return Ok(None);
        };
        Ok(Some((
            PyBytes::new(py, identity.as_bytes()),
            PyBytes::new(py, &out),
        )))
    }
}

impl EventWriter {
    /// `header` + the Avro body of `event` into `out`; its source, bucket and key objects,
    /// or None (nothing to rely on in `out`) for what the Python codec must decide.
    fn write<'py>(
        &self,
        py: Python<'py>,
        event: &Bound<'py, PyAny>,
        out: &mut Vec<u8>,
    ) -> PyResult<Option<[Bound<'py, PyAny>; 3]>> {
        if !event.get_type().is(self.event_type.bind(py)) {
            return Ok(None);
        }
        out.extend_from_slice(&self.header);
        let mut identity_fields = Vec::with_capacity(3);
        for (index, name) in self.fields.iter().enumerate() {
            let value = event.getattr(name.bind(py))?;
            let written = match index {
                6 | 7 | 9 | 10 => write_optional_text(out, &value),
                8 => write_optional_long(out, &value),
                _ => write_text(out, &value),
            };
            if !written {
                return Ok(None);
            }
            if (1..=3).contains(&index) {
                identity_fields.push(value);
            }
        }
        Ok(identity_fields.try_into().ok())
    }
}

/// `header` + the Avro body of the `ObjectEvent` that `S3Reader.events` makes of `event`
/// (source `s3`, `origin`) into `out`, field by field as `EventWriter.write` writes that
/// object; its identity as `EventWriter.record` makes it (`schemes`: source -> scheme where
/// they differ), or None (nothing to rely on in `out`) where `record` says None.
pub(crate) fn write_read_event(
    header: &[u8],
    schemes: &[(String, String)],
    event: &S3Event<'_>,
    origin: &str,
    out: &mut Vec<u8>,
) -> Option<String> {
    let (bucket, key) = (event.bucket, event.key.as_ref());
    let identity = identity(schemes, SOURCE, bucket, key)?;
    out.extend_from_slice(header);
    write_string(out, &event.id);
    write_string(out, SOURCE);
    write_string(out, bucket);
    write_string(out, key);
    write_string(out, event.kind);
    write_string(out, event.event_name);
    write_optional_string(out, Some(&event.position));
    write_optional_string(out, event.version_id);
    match event.size {
        Some(size) => {
            out.push(2);
            write_long(out, size);
        }
        None => out.push(0),
    }
    write_optional_string(out, event.etag);
    write_optional_string(out, event.event_time);
    write_string(out, origin);
    Some(identity)
}

/// `identity.event_identity`: `<scheme>://<bucket>/<key>`, the scheme the source's own or
/// its entry in `schemes`; None where `object_identity` would refuse (an invalid scheme, an
/// empty bucket or one with a `/`, an empty key).
fn identity(schemes: &[(String, String)], source: &str, bucket: &str, key: &str) -> Option<String> {
    let scheme = schemes
        .iter()
        .find(|(from, _)| from == source)
        .map_or(source, |(_, scheme)| scheme.as_str());
    if !valid_scheme(scheme) || bucket.is_empty() || bucket.contains('/') || key.is_empty() {
        return None;
    }
    Some([scheme, "://", bucket, "/", key].concat())
}

fn exact_text<'a>(value: &'a Bound<'_, PyAny>) -> Option<std::borrow::Cow<'a, str>> {
    if !value.is_exact_instance_of::<PyString>() {
        return None;
    }
    value.cast::<PyString>().ok()?.to_str().ok().map(Into::into)
}

fn write_text(out: &mut Vec<u8>, value: &Bound<'_, PyAny>) -> bool {
    match exact_text(value) {
        Some(text) => {
            write_string(out, &text);
            true
        }
        None => false,
    }
}

fn write_optional_text(out: &mut Vec<u8>, value: &Bound<'_, PyAny>) -> bool {
    if value.is_none() {
        write_optional_string(out, None);
        return true;
    }
    match exact_text(value) {
        Some(text) => {
            write_optional_string(out, Some(&text));
            true
        }
        None => false,
    }
}

fn write_optional_long(out: &mut Vec<u8>, value: &Bound<'_, PyAny>) -> bool {
    if value.is_none() {
        out.push(0);
        return true;
    }
    if !value.is_exact_instance_of::<PyInt>() {
        return false; // a bool, a float: the codec words it
    }
    match value.extract::<i64>() {
        Ok(number) => {
            out.push(2);
            write_long(out, number);
            true
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn event<'a>(bucket: &'a str, key: &'a str, size: Option<i64>) -> S3Event<'a> {
        S3Event {
            id: "s3-1".into(),
            bucket,
            key: Cow::Borrowed(key),
            kind: "created",
            event_name: "ObjectCreated:Put",
            position: Cow::Borrowed("0A"),
            version_id: None,
            size,
            etag: Some("e"),
            event_time: None,
        }
    }

    #[test]
    fn an_event_is_its_identity_and_header_then_fields_in_the_schema_order() {
        let mut out = Vec::new();
        let key = write_read_event(b"H", &[], &event("b", "k", Some(1)), "o", &mut out);
        assert_eq!(key.as_deref(), Some("s3://b/k"));
        let mut expected = b"H".to_vec();
        for text in ["s3-1", "s3", "b", "k", "created", "ObjectCreated:Put"] {
            write_string(&mut expected, text);
        }
        write_optional_string(&mut expected, Some("0A"));
        expected.extend_from_slice(&[0, 2, 2]); // no version id; size 1 (zigzag 2)
        write_optional_string(&mut expected, Some("e"));
        expected.push(0); // no event time
        write_string(&mut expected, "o");
        assert_eq!(out, expected);
    }

    #[test]
    fn a_scheme_of_its_own_names_the_identity() {
        let schemes = [("s3".to_string(), "s3x".to_string())];
        let mut out = Vec::new();
        let key = write_read_event(b"", &schemes, &event("b", "k", None), "o", &mut out);
        assert_eq!(key.as_deref(), Some("s3x://b/k"));
    }

    #[test]
    fn what_record_refuses_is_handed_back() {
        for (bucket, key) in [("", "k"), ("a/b", "k"), ("b", "")] {
            let mut out = Vec::new();
            assert_eq!(
                write_read_event(b"H", &[], &event(bucket, key, None), "o", &mut out),
                None
            );
        }
        let bad = [("s3".to_string(), "Bad Scheme".to_string())];
        let mut out = Vec::new();
        assert_eq!(
            write_read_event(b"H", &bad, &event("b", "k", None), "o", &mut out),
            None
        );
    }
}
