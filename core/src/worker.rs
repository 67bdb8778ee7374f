//! `seqgate._core.WorkerCore`: the Worker's record step for a batch of consumed records
//! (what `seqgate/streams/worker/step.py` `RecordStep.process` does for one), driven by
//! `seqgate/streams/worker/compiled_step.py`.
//!
//! The rule of this module: a record is either done here completely (its outbox record
//! handed to the producer, its state changes in the open transaction) or not touched at
//! all. Whatever this core cannot prove it decides as the Python rules do — a consumer
//! error, bytes its readers refuse, a record to dead-letter, a state value of an older
//! schema, a reconciled event, a produce() that raised — it stops *before* any side effect
//! and returns the record's index: the caller hands that record to the reference step and
//! calls again from the next one. After the point of no return (the outbox record is
//! queued), a failure is returned with the bookkeeping of that record done, as the Python
//! step raises after it.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::avro::{write_long, write_optional_string, write_string};
use crate::decide::{At, Outcome, Rules, Step, Verdict};
use crate::event::{self, Contract, Event};
use crate::order::Order;
use crate::py_objects::{view_of, Names, Record, View};

/// What a call did, for the caller's bookkeeping of the open transaction.
#[derive(Default)]
struct Done {
    records: u64,
    /// (partition, next offset) in the order partitions were met.
    next_offsets: Vec<(i32, i64)>,
    /// (partition, outcome, kind, count).
    tally: Vec<(i32, Outcome, String, u64)>,
}

impl Done {
    fn count(&mut self, partition: i32, offset: i64, outcome: Outcome, kind: &str) {
        self.records += 1;
        match self.next_offsets.iter_mut().find(|(p, _)| *p == partition) {
            Some(entry) => entry.1 = offset + 1,
            None => self.next_offsets.push((partition, offset + 1)),
        }
        match self
            .tally
            .iter_mut()
            .find(|(p, o, k, _)| *p == partition && *o == outcome && k == kind)
        {
            Some(entry) => entry.3 += 1,
            None => self.tally.push((partition, outcome, kind.to_owned(), 1)),
        }
    }
}

/// The Worker's per-record path, compiled; built once per worker from the Python tables.
#[pyclass(module = "seqgate._core", frozen)]
pub struct WorkerCore {
    contract: Contract,
    rules: Rules,
    outbox_header: Vec<u8>,
    decision_header: Option<Vec<u8>>,
}

fn order_named(name: &str) -> PyResult<Order> {
    Order::named(name)
        .ok_or_else(|| PyValueError::new_err(format!("unknown position order {name:?}")))
}

#[pymethods]
impl WorkerCore {
    #[new]
    #[pyo3(signature = (
        *, text_limits, known_sources, schemes, order, source_orders, admitted_kinds,
        ordered_sources, dedupe_window_ms, reconcile_prefix, seen_prefix, latest_prefix,
        stream_time_key, watermark_header, seen_header, outbox_header, decision_header
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        text_limits: Vec<usize>,
        known_sources: Vec<String>,
        schemes: Vec<(String, String)>,
        order: &str,
        source_orders: Vec<(String, String)>,
        admitted_kinds: Vec<String>,
        ordered_sources: Vec<String>,
        dedupe_window_ms: i64,
        reconcile_prefix: String,
        seen_prefix: Vec<u8>,
        latest_prefix: Vec<u8>,
        stream_time_key: Vec<u8>,
        watermark_header: Vec<u8>,
        seen_header: Vec<u8>,
        outbox_header: Vec<u8>,
        decision_header: Option<Vec<u8>>,
    ) -> PyResult<Self> {
        let text_limits = event::text_limits(text_limits).map_err(PyValueError::new_err)?;
        let source_orders = source_orders
            .into_iter()
            .map(|(source, name)| Ok((source, order_named(&name)?)))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(WorkerCore {
            contract: Contract {
                text_limits,
                known_sources,
                schemes,
            },
            rules: Rules {
                order: order_named(order)?,
                source_orders,
                admitted_kinds,
                ordered_sources,
                dedupe_window_ms,
                reconcile_prefix,
                seen_prefix,
                latest_prefix,
                stream_time_key,
                watermark_header,
                seen_header,
            },
            outbox_header,
            decision_header,
        })
    }

    /// Decide `messages[start:]` into the open transaction, in order, until a record this
    /// core leaves to the reference step (or the end). Returns `(stop, records,
    /// next_offsets, tally, decisions, error)`: `stop` the index of the record left
    /// (`len(messages)` at the end); `records`, `next_offsets` [(partition, next)] and
    /// `tally` [(partition, outcome index, kind, count)] what the records done add to the
    /// transaction; `decisions` [(partition, offset, identity, position, outcome index,
    /// event id, kind)] when `keep_decisions`; `error` an exception raised after a
    /// record's point of no return (the caller raises it), else None.
    ///
    /// `prefixes`: the headers an input event written with the current schema starts with.
    /// `view_for(partition)`: the partition's `OverlayView`. `produce`: the transactional
    /// producer's `produce`. `audit`: (the session's `produce`, the audit topic, its
    /// `on_delivery`) or None. `reach`: called after each record (a fault injector), or None.
    #[pyo3(signature = (
        messages, start, *, prefixes, view_for, produce, outbox_topic, audit, reach,
        keep_decisions
    ))]
    #[allow(clippy::too_many_arguments)]
    fn run<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'py, PyList>,
        start: usize,
        prefixes: Vec<Vec<u8>>,
        view_for: &Bound<'py, PyAny>,
        produce: &Bound<'py, PyAny>,
        outbox_topic: &Bound<'py, PyString>,
        audit: Option<(Bound<'py, PyAny>, Bound<'py, PyString>, Bound<'py, PyAny>)>,
        reach: Option<Bound<'py, PyAny>>,
        keep_decisions: bool,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let mut done = Done::default();
        let decisions = PyList::empty(py);
        let mut views: Vec<(i32, View<'py>)> = Vec::new();
        let mut stop = messages.len();
        let mut error: Option<PyErr> = None;
        let names = Names::new(py);
        let audit = audit.as_ref();
        let sinks = Sinks {
            decisions: keep_decisions.then_some(&decisions),
            audit,
            reach: reach.as_ref(),
        };
        for index in start..messages.len() {
            let message = messages.get_item(index)?;
            let Some(record) = Record::read(&message, &names, &prefixes) else {
                stop = index;
                break;
            };
            let body = &record.value.as_bytes()[record.body_from..];
            let Some(decided) = self.prepare(&record, body, &names, view_for, &mut views, audit)
            else {
                stop = index;
                break;
            };
            if decided.verdict.outcome == Outcome::Accepted
                && self
                    .produce_outbox(&record, body, &decided, &names, produce, outbox_topic)
                    .is_err()
            {
                // Nothing was queued: the reference step produces it again and meets the
                // same refusal (dead-lettered, retried on a full queue, or raised).
                stop = index;
                break;
            }
            // The point of no return: the record is done here.
            let event = &decided.event;
            done.count(
                record.at.partition,
                record.at.offset,
                decided.verdict.outcome,
                event.kind,
            );
            let finished = self.finish(&record, &decided, &mut views, &names, &sinks);
            if let Err(failed) = finished {
                error = Some(failed);
                stop = index + 1;
                break;
            }
        }
        let tally = done
            .tally
            .iter()
            .map(|(p, o, k, n)| (*p, *o as u8, k.as_str(), *n))
            .collect::<Vec<_>>();
        let error = error.map(|e| e.into_value(py).into_any());
        let decisions = keep_decisions.then_some(decisions);
        (
            stop,
            done.records,
            done.next_offsets,
            tally,
            decisions,
            error,
        )
            .into_pyobject(py)
    }
}

impl WorkerCore {
    /// Read, check and decide one record, with no side effect; None leaves it to the
    /// reference step (whatever the reason, the reference step words it).
    fn prepare<'py, 'b>(
        &self,
        record: &Record<'py>,
        body: &'b [u8],
        names: &Names<'py>,
        view_for: &Bound<'py, PyAny>,
        views: &mut Vec<(i32, View<'py>)>,
        audit: Option<&Audit<'py>>,
    ) -> Option<Decided<'b>> {
        let event = Event::read(body).ok()?;
        let identity = self.contract.identity(&event).ok()?;
        if record
            .key
            .as_ref()
            .is_some_and(|key| key.as_bytes() != identity.as_bytes())
        {
            return None; // a key mismatch: dead-lettered by the reference step
        }
        let view = view_of(views, record.at.partition, view_for, names)?;
        let previous = match audit {
            Some(_) => self.rules.previous(view, &identity).ok()?,
            None => None,
        };
        match self.rules.decide(view, &event, &identity, record.at) {
            Step::Decided(verdict) => Some(Decided {
                event,
                identity,
                verdict,
                previous,
            }),
            Step::Python | Step::Failed(_) => None,
        }
    }

    fn produce_outbox(
        &self,
        record: &Record<'_>,
        body: &[u8],
        decided: &Decided<'_>,
        names: &Names<'_>,
        produce: &Bound<'_, PyAny>,
        topic: &Bound<'_, PyString>,
    ) -> PyResult<()> {
        let py = produce.py();
        let outbox = self.outbox(body, &decided.verdict, record.at);
        let key = match &record.key {
            Some(key) => key.clone(),
            None => PyBytes::new(py, decided.identity.as_bytes()),
        };
        let kwargs = PyDict::new(py);
        kwargs.set_item(&names.value, PyBytes::new(py, &outbox))?;
        kwargs.set_item(&names.key, key)?;
        kwargs.set_item(&names.timestamp, record.at.record_time)?;
        produce.call((topic,), Some(&kwargs))?;
        Ok(())
    }

    /// After the outbox record is queued: the state changes into the open transaction, the
    /// decision kept and sent to the audit topic, the fault injector's point (the order of
    /// `RecordStep.process`).
    fn finish<'py>(
        &self,
        record: &Record<'py>,
        decided: &Decided<'_>,
        views: &mut [(i32, View<'py>)],
        names: &Names<'py>,
        sinks: &Sinks<'_, 'py>,
    ) -> PyResult<()> {
        let py = names.key.py();
        if let Some((_, view)) = views.iter().find(|(p, _)| *p == record.at.partition) {
            for (key, value) in &decided.verdict.changes {
                view.changes
                    .set_item(PyBytes::new(py, key), PyBytes::new(py, value))?;
            }
        }
        if let Some(decisions) = sinks.decisions {
            let event = &decided.event;
            decisions.append((
                record.at.partition,
                record.at.offset,
                &decided.identity,
                event.position,
                decided.verdict.outcome as u8,
                event.id,
                event.kind,
            ))?;
        }
        if let Some((session_produce, topic, on_delivery)) = sinks.audit {
            let decision = self.decision(decided, record.at);
            let kwargs = PyDict::new(py);
            kwargs.set_item(&names.key, PyBytes::new(py, decided.identity.as_bytes()))?;
            kwargs.set_item(&names.timestamp, record.at.record_time)?;
            kwargs.set_item(&names.on_delivery, on_delivery)?;
            session_produce.call((topic, PyBytes::new(py, &decision)), Some(&kwargs))?;
        }
        if let Some(reach) = sinks.reach {
            reach.call0()?;
        }
        Ok(())
    }

    /// `framed_outbox`: the header, the event's body as read, then the outbox's own fields.
    fn outbox(&self, body: &[u8], verdict: &Verdict, at: At) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.outbox_header.len() + body.len() + 24);
        out.extend_from_slice(&self.outbox_header);
        out.extend_from_slice(body);
        write_optional_string(&mut out, verdict.previous.as_deref());
        write_long(&mut out, i64::from(at.partition));
        write_long(&mut out, at.offset);
        out
    }

    /// `decision_record(Decision.of(...), previous)` of a decided record, framed.
    fn decision(&self, decided: &Decided<'_>, at: At) -> Vec<u8> {
        let event = &decided.event;
        let mut out = self.decision_header.clone().unwrap_or_default();
        write_long(&mut out, i64::from(at.partition));
        write_long(&mut out, at.offset);
        write_string(&mut out, &decided.identity);
        write_optional_string(&mut out, Some(event.id));
        write_optional_string(&mut out, event.position);
        write_optional_string(&mut out, Some(event.kind));
        write_string(&mut out, decided.verdict.outcome.name());
        write_optional_string(&mut out, None); // reason: only rejections have one
        write_optional_string(&mut out, decided.previous.as_deref());
        out
    }
}

/// Where a decided record goes besides the outbox and the state.
struct Sinks<'a, 'py> {
    /// The decisions kept for an `on_commit` listener.
    decisions: Option<&'a Bound<'py, PyList>>,
    audit: Option<&'a Audit<'py>>,
    /// The fault injector's `reach(AFTER_STATE_UPDATE)`.
    reach: Option<&'a Bound<'py, PyAny>>,
}

/// The session's `produce`, the audit topic and the session's `on_delivery`.
type Audit<'py> = (Bound<'py, PyAny>, Bound<'py, PyString>, Bound<'py, PyAny>);

/// A record decided here, not yet produced.
struct Decided<'b> {
    event: Event<'b>,
    identity: String,
    verdict: Verdict,
    /// With an audit topic: the watermark position the record saw.
    previous: Option<String>,
}
