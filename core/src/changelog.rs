//! The changelog step's produce calls, from the core (`worker/checkpoint.py`).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::py_objects::Names;

/// `produce(topic, value, key=key, partition=partition, on_delivery=...)` for each
/// (key, value) of `changes` in order, `on_last` reporting the delivery of the last one
/// only (the checkpoint's changelog step, `worker/checkpoint.py`). Returns how many were
/// produced: at the first `produce` that raises, the count so far, that record not queued
/// (the checkpoint produces it and the rest itself, through the session).
#[pyfunction]
#[pyo3(signature = (produce, topic, partition, changes, on_last))]
pub fn produce_changes(
    produce: &Bound<'_, PyAny>,
    topic: &Bound<'_, PyString>,
    partition: i32,
    changes: &Bound<'_, PyDict>,
    on_last: &Bound<'_, PyAny>,
) -> PyResult<usize> {
    let py = produce.py();
    let names = Names::new(py);
    let last = changes.len().saturating_sub(1);
    for (index, (key, value)) in changes.iter().enumerate() {
        let kwargs = PyDict::new(py);
        kwargs.set_item(&names.key, key)?;
        kwargs.set_item(&names.partition, partition)?;
        if index == last {
            kwargs.set_item(&names.on_delivery, on_last)?;
        }
        if produce.call((topic, value), Some(&kwargs)).is_err() {
            return Ok(index);
        }
    }
    Ok(changes.len())
}
