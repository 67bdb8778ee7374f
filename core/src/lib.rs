//! seqgate's compiled core (`seqgate._core`): the Worker's per-record path — decode of the
//! input event, the field checks, the ordering comparison, the decision and the encoding
//! of outbox, watermark and seen-id records — one call per consumed batch; and the
//! bridge's for native Amazon S3 notifications — strict JSON, the record rules, the
//! event's Avro bytes (`bridge`, `json`, `s3`).
//!
//! The Python rules stay the specification (docs/design.md §5.2.1). This core decides only
//! what it can prove it decides as they do; any record it is not certain of (a refusal to
//! word, an older schema, a reconciled event) goes back to them, and differential tests
//! compare both byte for byte (tests/unit/test_compiled_differential.py).

pub mod avro;
pub mod bridge;
pub mod changelog;
pub mod decide;
pub mod envelopes;
pub mod event;
pub mod event_writer;
pub mod eventbridge;
pub mod json;
pub mod order;
pub mod py_objects;
pub mod s3;
pub mod worker;

use pyo3::prelude::*;

#[pymodule]
fn _core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<worker::WorkerCore>()?;
    module.add_class::<bridge::S3Reader>()?;
    module.add_class::<event_writer::EventWriter>()?;
    module.add_function(wrap_pyfunction!(changelog::produce_changes, module)?)?;
    module.add("OUTCOMES", decide::Outcome::NAMES)?;
    Ok(())
}
