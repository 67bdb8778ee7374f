//! The bridge's compiled path (`seqgate/connectors/parsers/compiled.py`): a received body
//! read into `ObjectEvent`s, or straight into Kafka records, when every notification in it
//! is a clean Amazon S3 one, native or from EventBridge, plain or in its SNS and SQS
//! envelopes (`S3Reader`; the events are written by `event_writer.rs`). It answers None for
//! what it hands back to the Python parsers, which stay the reference.

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple, PyType};

use crate::avro::{Read, Refused};
use crate::envelopes::Reading;
use crate::event;
use crate::event_writer::{write_read_event, EventWriter};
use crate::eventbridge::Kinds;
use crate::s3::{Name, Rules, S3Event, SOURCE};

/// `ObjectEvent`'s fields, in the schema's order.
pub(crate) const FIELDS: [&str; 12] = [
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

pub(crate) fn interned(py: Python<'_>) -> Vec<Py<PyString>> {
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
    /// `eventbridge_kinds`: `EVENTBRIDGE_KINDS`'s items, then the kinds of a removal and a
    /// version removal; `max_depth`: `json_fields.MAX_JSON_DEPTH`; `event_type`:
    /// `ObjectEvent`, a frozen dataclass with slots and no `__post_init__`.
    #[new]
    #[pyo3(signature = (
        *, names, eventbridge_kinds, removed, version_removed, schema_floor_two_zero,
        text_limits, max_depth, event_type
    ))]
    #[allow(clippy::too_many_arguments)] // keyword-only, one per rule Python gives
    fn new(
        py: Python<'_>,
        names: Vec<(String, String, Option<String>)>,
        eventbridge_kinds: Vec<(String, String)>,
        removed: String,
        version_removed: String,
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
                eventbridge: Kinds {
                    by_detail_type: eventbridge_kinds,
                    removed,
                    version_removed,
                },
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
        let mut objects = Vec::new();
        let mut failure = None;
        let read = self.read(raw.as_bytes(), origin_text, &mut |event| {
            match self.object_event(py, event, origin) {
                Ok(object) => objects.push(object),
                Err(error) => failure = Some(error),
            }
            failure.as_ref().map_or(Ok(()), |_| Err(Refused))
        });
        if let Some(error) = failure {
            return Err(error);
        }
        match read {
            Ok(()) => Ok(Some(PyTuple::new(py, objects)?)),
            Err(Refused) => Ok(None),
        }
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
        let mut records = Vec::new();
        let read = self.read(raw.as_bytes(), origin_text, &mut |event| {
            let mut value = Vec::with_capacity(writer.header.len() + 256);
            let key = write_read_event(
                &writer.header,
                &writer.schemes,
                event,
                origin_text,
                &mut value,
            )
            .ok_or(Refused)?;
            records.push((PyBytes::new(py, key.as_bytes()), PyBytes::new(py, &value)));
            Ok(())
        });
        match read {
            Ok(()) => Ok(Some(PyList::new(py, records)?)),
            Err(Refused) => Ok(None),
        }
    }
}

impl S3Reader {
    /// Hands `sink` every event of `bytes` (a received body) when the core reads every
    /// notification in it (`envelopes.rs`); `Refused` when the Python parsers must.
    fn read(
        &self,
        bytes: &[u8],
        origin: &str,
        sink: &mut impl FnMut(&S3Event<'_>) -> Read<()>,
    ) -> Read<()> {
        let reading = Reading {
            rules: &self.rules,
            max_json_depth: self.max_depth,
            origin,
        };
        reading.body(bytes, sink)
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
