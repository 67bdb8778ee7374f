//! The state store's two loops over records, from the core: the changelog records a
//! restore takes (`state/restore.py`, `_ChangelogApplier.take`) and the changes a
//! `WriteBatch` receives (`state/store.py`, `PartitionStore.apply`). Each makes the calls
//! the Python loop makes, in the same order, and nothing else: the Python loops stay the
//! specification, used with `--engine python`.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

/// For each changelog record with a key and an offset: `pending[key] = value`. Returns
/// (records taken, the next offset after the last one taken, or None when none was).
#[pyfunction]
pub fn take_changelog(
    records: &Bound<'_, PyList>,
    pending: &Bound<'_, PyDict>,
) -> PyResult<(u64, Option<i64>)> {
    let (mut taken, mut next_offset) = (0u64, None);
    for message in records.iter() {
        let key = message.call_method0("key")?;
        let offset = message.call_method0("offset")?;
        if key.is_none() || offset.is_none() {
            continue;
        }
        pending.set_item(key, message.call_method0("value")?)?;
        next_offset = Some(offset.extract::<i64>()? + 1);
        taken += 1;
    }
    Ok((taken, next_offset))
}

/// `put(prefix + key, value)` or, for None, `delete(prefix + key)`, for each change in
/// order. Returns the (key, value) of the keys starting with `reindexed` (seen ids), whose
/// expiry index the store updates itself.
#[pyfunction]
pub fn batch_changes<'py>(
    put: &Bound<'py, PyAny>,
    delete: &Bound<'py, PyAny>,
    prefix: &[u8],
    changes: &Bound<'py, PyDict>,
    reindexed: &[u8],
) -> PyResult<Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
    let py = put.py();
    let mut seen = Vec::new();
    let mut stored = prefix.to_vec();
    for (key, value) in changes.iter() {
        let key_bytes = key.cast::<PyBytes>()?.as_bytes();
        stored.truncate(prefix.len());
        stored.extend_from_slice(key_bytes);
        let stored_key = PyBytes::new(py, &stored);
        if value.is_none() {
            delete.call1((stored_key,))?;
        } else {
            put.call1((stored_key, &value))?;
        }
        if key_bytes.starts_with(reindexed) {
            seen.push((key, value));
        }
    }
    Ok(seen)
}
