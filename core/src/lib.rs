//! seqgate's compiled core (`seqgate._core`): the Worker's per-record path — decode of the
//! input event, the field checks, the ordering comparison, the decision and the encoding
//! of outbox, watermark and seen-id records — one call per consumed batch.
//!
//! The Python rules stay the specification (docs/design.md §5.2.1). This core decides only
//! what it can prove it decides as they do; any record it is not certain of (a refusal to
//! word, an older schema, a reconciled event) goes back to them, and differential tests
//! compare both byte for byte (tests/unit/test_compiled_differential.py).

pub mod avro;
pub mod changelog;
pub mod decide;
pub mod event;
pub mod order;
pub mod py_objects;
pub mod worker;

use pyo3::prelude::*;

#[pymodule]
fn _core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<worker::WorkerCore>()?;
    module.add_function(wrap_pyfunction!(changelog::produce_changes, module)?)?;
    module.add("OUTCOMES", decide::Outcome::NAMES)?;
    Ok(())
}
