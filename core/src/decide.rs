//! The decision of `seqgate/streams/rules/decider.py` and `policy.py` for one checked event,
//! against the state the record sees. Whatever the Python rules would dead-letter, or read
//! through a schema other than the current one, is [`Step::Python`]: the caller hands that
//! record to the reference path, which decides it and words the reason.

use std::cmp::Ordering;

use crate::avro::{write_long, write_string, Read, Reader, Refused};
use crate::event::Event;
use crate::order::Order;

/// The outcomes the compiled path can reach, in the order of Python's `Outcome`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    Accepted = 0,
    Duplicate = 1,
    Stale = 2,
    Late = 3,
    Filtered = 4,
}

impl Outcome {
    /// The values of Python's `Outcome`, by index.
    pub const NAMES: [&'static str; 5] = ["accepted", "duplicate", "stale", "late", "filtered"];

    pub fn name(self) -> &'static str {
        Outcome::NAMES[self as usize]
    }
}

/// The state one record sees, by changelog key: the open transaction's changes, then
/// the committed store.
pub trait State {
    type Value: AsRef<[u8]>;
    type Error;
    fn get(&mut self, key: &[u8]) -> Result<Option<Self::Value>, Self::Error>;
}

/// The policy and the state's layout, as `Policy`, `state/keys.py` and the codecs give them.
pub struct Rules {
    pub order: Order,
    pub source_orders: Vec<(String, Order)>,
    pub admitted_kinds: Vec<String>,
    pub ordered_sources: Vec<String>,
    pub dedupe_window_ms: i64,
    pub reconcile_prefix: String,
    pub seen_prefix: Vec<u8>,
    pub latest_prefix: Vec<u8>,
    pub stream_time_key: Vec<u8>,
    pub watermark_header: Vec<u8>,
    pub seen_header: Vec<u8>,
}

/// Where the record was read, and its Kafka timestamp (ms): never the clock.
#[derive(Debug, Clone, Copy)]
pub struct At {
    pub partition: i32,
    pub offset: i64,
    pub record_time: i64,
}

#[derive(Debug, PartialEq, Eq)]
pub struct Verdict {
    pub outcome: Outcome,
    /// Accepted: the outbox record's `previous_position`.
    pub previous: Option<String>,
    pub changes: Vec<(Vec<u8>, Vec<u8>)>,
}

pub enum Step<E> {
    Decided(Verdict),
    /// Left to the Python rules.
    Python,
    Failed(E),
}

impl<E> From<Refused> for Step<E> {
    fn from(_: Refused) -> Self {
        Step::Python
    }
}

impl Rules {
    fn admitted(&self, kind: &str) -> bool {
        self.admitted_kinds.iter().any(|k| k == kind)
    }

    fn order_for(&self, source: &str) -> Order {
        self.source_orders
            .iter()
            .find(|(s, _)| s == source)
            .map_or(self.order, |(_, o)| *o)
    }

    fn ordered(&self, source: &str) -> bool {
        self.ordered_sources.iter().any(|s| s == source)
    }

    /// Decide `event` of object `identity` (`decide_record`).
    pub fn decide<S: State>(
        &self,
        state: &mut S,
        event: &Event<'_>,
        identity: &str,
        at: At,
    ) -> Step<S::Error> {
        if event.origin.starts_with(&self.reconcile_prefix) {
            return Step::Python; // a compare-and-set on the latest event (docs/reconcile.md)
        }
        match event.position {
            Some(position) if self.ordered(event.source) => {
                self.by_position(state, event, position, identity, at)
            }
            _ => self.by_id(state, event, identity, at),
        }
    }

    /// The watermark's position as the record sees it (`audit.previous_position`): Err
    /// when it is not a current watermark (the Python rules read it), or the state failed.
    pub fn previous<S: State>(
        &self,
        state: &mut S,
        identity: &str,
    ) -> Result<Option<String>, Step<S::Error>> {
        match state.get(identity.as_bytes()) {
            Err(error) => Err(Step::Failed(error)),
            Ok(None) => Ok(None),
            Ok(Some(raw)) => match self.watermark_position(raw.as_ref()) {
                Ok(position) => Ok(Some(position.to_owned())),
                Err(Refused) => Err(Step::Python),
            },
        }
    }

    fn watermark_position<'v>(&self, raw: &'v [u8]) -> Read<&'v str> {
        let body = raw
            .strip_prefix(self.watermark_header.as_slice())
            .ok_or(Refused)?;
        Reader::new(body, 0).string()
    }

    fn by_position<S: State>(
        &self,
        state: &mut S,
        event: &Event<'_>,
        position: &str,
        identity: &str,
        at: At,
    ) -> Step<S::Error> {
        let raw = match state.get(identity.as_bytes()) {
            Ok(raw) => raw,
            Err(error) => return Step::Failed(error),
        };
        let previous = match &raw {
            None => None,
            Some(raw) => match self.watermark_position(raw.as_ref()) {
                Ok(position) => Some(position),
                Err(refused) => return refused.into(),
            },
        };
        if !self.admitted(event.kind) {
            return Step::Decided(Verdict::plain(Outcome::Filtered));
        }
        let order = self.order_for(event.source);
        let comparison = match previous {
            None => order.check(position).map(|()| Ordering::Greater),
            Some(previous) => order.compare(position, previous),
        };
        let outcome = match comparison {
            Err(refused) => return refused.into(),
            Ok(Ordering::Greater) => Outcome::Accepted,
            Ok(Ordering::Equal) => Outcome::Duplicate,
            Ok(Ordering::Less) => Outcome::Stale,
        };
        if outcome != Outcome::Accepted {
            return Step::Decided(Verdict::plain(outcome));
        }
        let mut watermark = self.watermark_header.clone();
        write_string(&mut watermark, position);
        write_string(&mut watermark, event.id);
        write_long(&mut watermark, i64::from(at.partition));
        write_long(&mut watermark, at.offset);
        Step::Decided(Verdict {
            outcome,
            previous: previous.map(str::to_owned),
            changes: vec![(identity.as_bytes().to_vec(), watermark)],
        })
    }

    fn by_id<S: State>(
        &self,
        state: &mut S,
        event: &Event<'_>,
        identity: &str,
        at: At,
    ) -> Step<S::Error> {
        let mut changes = Vec::new();
        let raw_time = match state.get(&self.stream_time_key) {
            Ok(raw) => raw,
            Err(error) => return Step::Failed(error),
        };
        let mut stream_time = match &raw_time {
            None => at.record_time,
            Some(raw) => match parse_stream_time(raw.as_ref()) {
                Ok(time) => time,
                Err(refused) => return refused.into(),
            },
        };
        if at.record_time > stream_time || raw_time.is_none() {
            stream_time = at.record_time;
            changes.push((
                self.stream_time_key.clone(),
                stream_time.to_string().into_bytes(),
            ));
        }
        let mut seen_key = self.seen_prefix.clone();
        seen_key.extend_from_slice(event.id.as_bytes());
        let seen_time = match state.get(&seen_key) {
            Err(error) => return Step::Failed(error),
            Ok(None) => None,
            Ok(Some(raw)) => match self.seen_record_time(raw.as_ref()) {
                Ok(time) => Some(time),
                Err(refused) => return refused.into(),
            },
        };
        let window = i128::from(self.dedupe_window_ms);
        let outcome = if !self.admitted(event.kind) {
            Outcome::Filtered
        } else if seen_time.is_some_and(|t| i128::from(t) + 2 * window >= i128::from(stream_time)) {
            Outcome::Duplicate
        } else if i128::from(at.record_time) + window < i128::from(stream_time) {
            Outcome::Late
        } else {
            Outcome::Accepted
        };
        if outcome == Outcome::Accepted {
            let mut entry = self.seen_header.clone();
            write_string(&mut entry, event.id);
            write_string(&mut entry, identity);
            write_long(&mut entry, at.record_time);
            write_long(&mut entry, i64::from(at.partition));
            write_long(&mut entry, at.offset);
            let mut latest = self.latest_prefix.clone();
            latest.extend_from_slice(identity.as_bytes());
            changes.push((seen_key, entry.clone()));
            changes.push((latest, entry));
        }
        Step::Decided(Verdict {
            outcome,
            previous: None,
            changes,
        })
    }

    /// The `record_time` of a stored `SeenEvent` written with the current schema.
    fn seen_record_time(&self, raw: &[u8]) -> Read<i64> {
        let body = raw
            .strip_prefix(self.seen_header.as_slice())
            .ok_or(Refused)?;
        let mut r = Reader::new(body, 0);
        r.string()?; // event_id
        r.string()?; // identity
        let record_time = r.long()?;
        r.int()?; // input_partition
        r.long()?; // input_offset
        r.end()?;
        Ok(record_time)
    }
}

impl Verdict {
    fn plain(outcome: Outcome) -> Verdict {
        Verdict {
            outcome,
            previous: None,
            changes: Vec::new(),
        }
    }
}

/// The ASCII digits `encode_stream_time` writes (an optional `-`); anything else is
/// left to Python's `int()`.
fn parse_stream_time(raw: &[u8]) -> Read<i64> {
    let digits = raw.strip_prefix(b"-").unwrap_or(raw);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(Refused);
    }
    std::str::from_utf8(raw)
        .map_err(|_| Refused)?
        .parse()
        .map_err(|_| Refused)
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
