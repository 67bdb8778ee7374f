//! What the compiled core reads from and writes to Python objects: the consumed
//! `confluent_kafka.Message`s, the open transaction's `OverlayView` and the committed store
//! behind it, and the attribute and keyword names it uses (interned once per call).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::decide::{At, State};

/// A committed-or-pending state value: bytes owned by Python.
pub struct Value<'py>(Bound<'py, PyBytes>);

impl AsRef<[u8]> for Value<'_> {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// One partition's `OverlayView`: the open transaction's changes (a dict where None is a
/// deletion), then the committed store, read as `PartitionStore.get` reads it (RocksDB's
/// `get` of the mirror's prefix + the key; a failure hands the record to the Python step,
/// whose read words it).
pub struct View<'py> {
    pub changes: Bound<'py, PyDict>,
    committed: Bound<'py, PyAny>,
    prefix: Vec<u8>,
    key: Vec<u8>,
}

impl<'py> State for View<'py> {
    type Value = Value<'py>;
    type Error = PyErr;

    fn get(&mut self, key: &[u8]) -> PyResult<Option<Value<'py>>> {
        let py = self.changes.py();
        let found = match self.changes.get_item(PyBytes::new(py, key))? {
            Some(pending) => pending,
            None => {
                self.key.truncate(self.prefix.len());
                self.key.extend_from_slice(key);
                self.committed.call1((PyBytes::new(py, &self.key),))?
            }
        };
        if found.is_none() {
            return Ok(None);
        }
        Ok(Some(Value(found.cast_into::<PyBytes>()?)))
    }
}

/// The partition's view, looked up once per call; None when `view_for` fails (a partition
/// not assigned: the reference step raises it).
pub fn view_of<'v, 'py>(
    views: &'v mut Vec<(i32, View<'py>)>,
    partition: i32,
    view_for: &Bound<'py, PyAny>,
    names: &Names<'py>,
) -> Option<&'v mut View<'py>> {
    let found = match views.iter().position(|(p, _)| *p == partition) {
        Some(found) => found,
        None => {
            let overlay = view_for.call1((partition,)).ok()?;
            let changes = overlay
                .getattr(&names.changes)
                .ok()?
                .cast_into::<PyDict>()
                .ok()?;
            let reader = overlay.getattr(&names.raw_reader).ok()?;
            let (committed, prefix): (Bound<'py, PyAny>, Vec<u8>) = reader.extract().ok()?;
            let key = prefix.clone();
            views.push((
                partition,
                View {
                    changes,
                    committed,
                    prefix,
                    key,
                },
            ));
            views.len() - 1
        }
    };
    Some(&mut views[found].1)
}

/// Interned attribute and keyword names.
pub struct Names<'py> {
    pub error: Bound<'py, PyString>,
    pub value: Bound<'py, PyString>,
    pub key: Bound<'py, PyString>,
    pub partition: Bound<'py, PyString>,
    pub offset: Bound<'py, PyString>,
    pub timestamp: Bound<'py, PyString>,
    pub changes: Bound<'py, PyString>,
    pub raw_reader: Bound<'py, PyString>,
    pub on_delivery: Bound<'py, PyString>,
}

impl<'py> Names<'py> {
    pub fn new(py: Python<'py>) -> Self {
        let name = |text: &str| PyString::intern(py, text);
        Names {
            error: name("error"),
            value: name("value"),
            key: name("key"),
            partition: name("partition"),
            offset: name("offset"),
            timestamp: name("timestamp"),
            changes: name("changes"),
            raw_reader: name("raw_reader"),
            on_delivery: name("on_delivery"),
        }
    }
}

/// A consumed record's fields, as `confluent_kafka.Message` gives them.
pub struct Record<'py> {
    pub value: Bound<'py, PyBytes>,
    /// Where the event's Avro body starts (after its header).
    pub body_from: usize,
    /// The record key; None when absent or empty (`key or None`).
    pub key: Option<Bound<'py, PyBytes>>,
    pub at: At,
}

impl<'py> Record<'py> {
    /// None when the record is the reference step's: a consumer error, no value, a value
    /// not written with the current schema, or anything unexpected in reading it.
    pub fn read(
        message: &Bound<'py, PyAny>,
        names: &Names<'py>,
        prefixes: &[Vec<u8>],
    ) -> Option<Record<'py>> {
        if !message.call_method0(&names.error).ok()?.is_none() {
            return None;
        }
        let value = message
            .call_method0(&names.value)
            .ok()?
            .cast_into::<PyBytes>()
            .ok()?;
        let bytes = value.as_bytes();
        let body_from = prefixes
            .iter()
            .find(|prefix| bytes.starts_with(prefix))?
            .len();
        let key = message.call_method0(&names.key).ok()?;
        let key = if key.is_none() {
            None
        } else {
            let key = key.cast_into::<PyBytes>().ok()?;
            (!key.as_bytes().is_empty()).then_some(key)
        };
        let partition: i32 = message
            .call_method0(&names.partition)
            .ok()?
            .extract()
            .ok()?;
        let offset: i64 = message.call_method0(&names.offset).ok()?.extract().ok()?;
        let (_, record_time): (i64, i64) = message
            .call_method0(&names.timestamp)
            .ok()?
            .extract()
            .ok()?;
        Some(Record {
            value,
            body_from,
            key,
            at: At {
                partition,
                offset,
                record_time,
            },
        })
    }
}
