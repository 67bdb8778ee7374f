//! The bridge's compiled path (`seqgate/connectors/parsers/compiled.py`): a received body
//! read into `ObjectEvent`s when every record of it is a clean native Amazon S3 record
//! (`S3Reader`), and an `ObjectEvent` written as Avro (`EventWriter`). Each answers None
//! for what it hands back to the Python parsers and codec, which stay the reference.

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyList, PyString, PyTuple, PyType};

use crate::avro::{write_long, write_optional_string, write_string};
use crate::event::{self, valid_scheme};
use crate::json;
use crate::s3::{sns_message, Name, Rules, S3Event, SOURCE};

/// `ObjectEvent`'s fields, in the schema's order.
const FIELDS: [&str; 12] = [
    "id",
    "source",
    "bucket",
    "key",
    "kind",
    "event_name",
    "position",
    "version_id",
    "size",
    "etag",
    "event_time",
    "origin",
];

const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

fn interned(py: Python<'_>) -> Vec<Py<PyString>> {
    FIELDS
        .iter()
        .map(|name| PyString::intern(py, name).unbind())
        .collect()
}

#[pyclass(frozen)]
pub struct S3Reader {
    rules: Rules,
    /// `json_fields.MAX_JSON_DEPTH`.
    max_depth: usize,
    event_type: Py<PyType>,
    fields: Vec<Py<PyString>>,
    source: Py<PyString>,
}

#[pymethods]
impl S3Reader {
    /// `names`: (name, kind, versioned kind or None) of every Amazon S3 event name;
    /// `max_depth`: `json_fields.MAX_JSON_DEPTH`; `event_type`: `ObjectEvent`, a frozen
    /// dataclass with slots and no `__post_init__`.
    #[new]
    #[pyo3(signature = (*, names, schema_floor_two_zero, text_limits, max_depth, event_type))]
    fn new(
        py: Python<'_>,
        names: Vec<(String, String, Option<String>)>,
        schema_floor_two_zero: bool,
        text_limits: Vec<usize>,
        max_depth: usize,
        event_type: Bound<'_, PyType>,
    ) -> PyResult<Self> {
        let names = names
            .into_iter()
            .map(|(name, kind, versioned_kind)| Name {
                name,
                kind,
                versioned_kind,
            })
            .collect();
        Ok(S3Reader {
            rules: Rules {
                names,
                floor_two_zero: schema_floor_two_zero,
                text_limits: event::text_limits(text_limits).map_err(PyValueError::new_err)?,
            },
            max_depth,
            event_type: event_type.unbind(),
            fields: interned(py),
            source: PyString::intern(py, SOURCE).unbind(),
        })
    }

    /// The events of `raw` (a received body) as a tuple of `ObjectEvent`, each with
    /// `origin`; None when the Python parsers must read it.
    fn events<'py>(
        &self,
        py: Python<'py>,
        raw: &Bound<'py, PyBytes>,
        origin: &Bound<'py, PyString>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let Ok(origin_text) = origin.to_str() else {
            return Ok(None); // a lone surrogate: the field limits word it
        };
        self.with_events(raw.as_bytes(), origin_text, |events| {
            let objects = events
                .iter()
                .map(|event| self.object_event(py, event, origin))
                .collect::<PyResult<Vec<_>>>()?;
            PyTuple::new(py, objects)
        })
        .transpose()
    }

    /// The Kafka records of `raw`'s events, `(identity, value)` as `writer.record` makes
    /// them from the `ObjectEvent`s `events` reads, written straight from what was read
    /// (no `ObjectEvent` in between); None when `events` would say None or `writer.record`
    /// would hand any of them back.
    fn records<'py>(
        &self,
        py: Python<'py>,
        raw: &Bound<'py, PyBytes>,
        origin: &Bound<'py, PyString>,
        writer: &EventWriter,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let Ok(origin_text) = origin.to_str() else {
            return Ok(None);
        };
        let written = self.with_events(raw.as_bytes(), origin_text, |events| {
            let mut records = Vec::with_capacity(events.len());
            for event in events {
                let mut value = Vec::with_capacity(writer.header.len() + 256);
                let key = write_read_event(
                    &writer.header,
                    &writer.schemes,
                    event,
                    origin_text,
                    &mut value,
                )?;
                records.push((PyBytes::new(py, key.as_bytes()), PyBytes::new(py, &value)));
            }
            Some(records)
        });
        match written.flatten() {
            Some(records) => Ok(Some(PyList::new(py, records)?)),
            None => Ok(None),
        }
    }
}

impl S3Reader {
    /// `then(events)` when every record of `bytes` (a received body) is one the core reads
    /// (plain, or as an SNS notification's `Message`); None when the Python parsers must.
    fn with_events<R>(
        &self,
        bytes: &[u8],
        origin: &str,
        then: impl FnOnce(&[S3Event<'_>]) -> R,
    ) -> Option<R> {
        let body = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
        let text = std::str::from_utf8(body).ok()?;
        let document = json::parse(text, self.max_depth).ok()?;
        // An SNS notification (HTTP form, or an SQS body without raw delivery) carries
        // the S3 document as its `Message`, a JSON text of its own.
        let inner;
        let notification = match sns_message(&document) {
            Some(message) => {
                let message = message.strip_prefix('\u{feff}').unwrap_or(message);
                inner = json::parse(message, self.max_depth).ok()?;
                &inner
            }
            None => &document,
        };
        let events = self.rules.events(notification, origin).ok()?;
        Some(then(&events))
    }

    /// An `ObjectEvent` made as `avro_codec._constructor` makes one: `object.__new__`,
    /// then each slot set through the generic `__setattr__` (the frozen dataclass's own
    /// refuses; `object.__setattr__` is what its `__init__` calls).
    fn object_event<'py>(
        &self,
        py: Python<'py>,
        event: &S3Event<'_>,
        origin: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let event_type = self.event_type.bind(py);
        let no_arguments = PyTuple::empty(py);
        let new = unsafe { ffi::PyBaseObject_Type.tp_new }
            .ok_or_else(|| PyValueError::new_err("object.__new__ is missing"))?;
        // SAFETY: object.__new__(event_type), as `object.__new__(cls)` calls it; the
        // result is a new reference (or NULL with the error set).
        let object = unsafe {
            let raw = new(
                event_type.as_type_ptr(),
                no_arguments.as_ptr(),
                std::ptr::null_mut(),
            );
            Bound::from_owned_ptr_or_err(py, raw)?
        };
        let optional = |value: Option<&str>| -> Bound<'py, PyAny> {
            match value {
                Some(text) => PyString::new(py, text).into_any(),
                None => py.None().into_bound(py),
            }
        };
        let values: [Bound<'py, PyAny>; 12] = [
            PyString::new(py, &event.id).into_any(),
            self.source.bind(py).clone().into_any(),
            PyString::new(py, event.bucket).into_any(),
            PyString::new(py, &event.key).into_any(),
            PyString::new(py, event.kind).into_any(),
            PyString::new(py, event.event_name).into_any(),
            PyString::new(py, &event.position).into_any(),
            optional(event.version_id),
            match event.size {
                Some(size) => size.into_pyobject(py)?.into_any(),
                None => py.None().into_bound(py),
            },
            optional(event.etag),
            optional(event.event_time),
            origin.clone().into_any(),
        ];
        for (name, value) in self.fields.iter().zip(values.iter()) {
            // SAFETY: three live references; the generic setattr uses the slot's descriptor.
            let status = unsafe {
                ffi::PyObject_GenericSetAttr(object.as_ptr(), name.as_ptr(), value.as_ptr())
            };
            if status != 0 {
                return Err(PyErr::fetch(py));
            }
        }
        Ok(object)
    }
}

/// `OBJECT_EVENT`'s writer for one framing: `header` + the Avro body; and an event's
/// Kafka record, its identity (`identity.event_identity`) as the key.
#[pyclass(frozen)]
pub struct EventWriter {
    header: Vec<u8>,
    event_type: Py<PyType>,
    fields: Vec<Py<PyString>>,
    /// (source, scheme) where a source's identity scheme is not its name.
    schemes: Vec<(String, String)>,
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
fn write_read_event(
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
