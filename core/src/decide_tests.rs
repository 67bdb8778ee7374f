use std::collections::HashMap;
use std::convert::Infallible;

use super::*;

const HEADER: &[u8] = b"\xc3\x01wmwmwmwm";
const SEEN: &[u8] = b"\xc3\x01seenseen";

struct Map(HashMap<Vec<u8>, Vec<u8>>);

impl State for Map {
    type Value = Vec<u8>;
    type Error = Infallible;
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, Infallible> {
        Ok(self.0.get(key).cloned())
    }
}

impl Map {
    fn apply(&mut self, verdict: &Verdict) {
        for (key, value) in &verdict.changes {
            self.0.insert(key.clone(), value.clone());
        }
    }
}

fn rules() -> Rules {
    Rules {
        order: Order::Aws,
        source_orders: vec![("minio".into(), Order::Numeric)],
        admitted_kinds: vec!["created".into()],
        ordered_sources: vec!["s3".into(), "azure".into()],
        dedupe_window_ms: 1000,
        reconcile_prefix: "reconcile:".into(),
        seen_prefix: b"\x00seen\x00".to_vec(),
        latest_prefix: b"\x00latest\x00".to_vec(),
        stream_time_key: b"\x00stream-time".to_vec(),
        watermark_header: HEADER.to_vec(),
        seen_header: SEEN.to_vec(),
    }
}

fn event<'a>(source: &'a str, id: &'a str, position: Option<&'a str>) -> Event<'a> {
    Event {
        id,
        source,
        bucket: "b",
        key: "k",
        kind: "created",
        event_name: "ObjectCreated:Put",
        position,
        version_id: None,
        size: None,
        etag: None,
        event_time: None,
        origin: "sqs:q",
    }
}

fn at(offset: i64, record_time: i64) -> At {
    At {
        partition: 0,
        offset,
        record_time,
    }
}

fn decided(step: Step<Infallible>) -> Verdict {
    match step {
        Step::Decided(verdict) => verdict,
        Step::Python => panic!("left to Python"),
        Step::Failed(never) => match never {},
    }
}

#[test]
fn positions_decide_accepted_duplicate_stale() {
    let (rules, mut state) = (rules(), Map(HashMap::new()));
    let mut outcomes = Vec::new();
    for (offset, position) in ["f", "000F", "e", "F0", "10"].iter().enumerate() {
        let verdict = decided(rules.decide(
            &mut state,
            &event("s3", "i", Some(position)),
            "s3://b/k",
            at(offset as i64, 0),
        ));
        state.apply(&verdict);
        outcomes.push(verdict.outcome);
    }
    use Outcome::*;
    assert_eq!(outcomes, [Accepted, Stale, Stale, Duplicate, Stale]);
}

#[test]
fn the_watermark_holds_the_position_as_written_and_names_the_event() {
    let (rules, mut state) = (rules(), Map(HashMap::new()));
    let verdict = decided(rules.decide(
        &mut state,
        &event("s3", "id", Some("0A")),
        "s3://b/k",
        at(300, 0),
    ));
    let mut expected = HEADER.to_vec();
    expected.extend_from_slice(b"\x040A\x04id\x00\xd8\x04");
    assert_eq!(verdict.changes, vec![(b"s3://b/k".to_vec(), expected)]);
    assert_eq!(verdict.previous, None);
    state.apply(&verdict);
    let next = decided(rules.decide(
        &mut state,
        &event("s3", "id2", Some("0B")),
        "s3://b/k",
        at(301, 0),
    ));
    assert_eq!(next.previous.as_deref(), Some("0A"));
}

#[test]
fn minio_positions_are_numeric_whatever_the_default() {
    let mut rules = rules();
    rules.ordered_sources.push("minio".into());
    let mut state = Map(HashMap::new());
    let first = decided(rules.decide(
        &mut state,
        &event("minio", "a", Some("f")),
        "minio://b/k",
        at(0, 0),
    ));
    state.apply(&first);
    let second = decided(rules.decide(
        &mut state,
        &event("minio", "b", Some("10")),
        "minio://b/k",
        at(1, 0),
    ));
    assert_eq!(second.outcome, Outcome::Accepted);
}

#[test]
fn an_invalid_position_a_reconciled_event_or_an_old_watermark_is_left_to_python() {
    let (rules, mut state) = (rules(), Map(HashMap::new()));
    assert!(matches!(
        rules.decide(
            &mut state,
            &event("s3", "i", Some("xyz")),
            "s3://b/k",
            at(0, 0)
        ),
        Step::Python
    ));
    let mut reconciled = event("s3", "i", Some("1"));
    reconciled.origin = "reconcile:b";
    assert!(matches!(
        rules.decide(&mut state, &reconciled, "s3://b/k", at(0, 0)),
        Step::Python
    ));
    state
        .0
        .insert(b"s3://b/k".to_vec(), b"\xc3\x01oldschema\x021".to_vec());
    assert!(matches!(
        rules.decide(
            &mut state,
            &event("s3", "i", Some("2")),
            "s3://b/k",
            at(0, 0)
        ),
        Step::Python
    ));
}

#[test]
fn a_kind_not_admitted_is_filtered_without_a_change() {
    let (rules, mut state) = (rules(), Map(HashMap::new()));
    let mut removed = event("s3", "i", Some("1"));
    removed.kind = "removed";
    let verdict = decided(rules.decide(&mut state, &removed, "s3://b/k", at(0, 0)));
    assert_eq!(
        (verdict.outcome, verdict.changes.len()),
        (Outcome::Filtered, 0)
    );
}

#[test]
fn ids_are_deduplicated_within_the_window_and_late_events_never_accepted() {
    let (rules, mut state) = (rules(), Map(HashMap::new()));
    let mut decide = |id: &str, offset: i64, time: i64| {
        let verdict = decided(rules.decide(
            &mut state,
            &event("gcs", id, None),
            "gs://b/k",
            at(offset, time),
        ));
        state.apply(&verdict);
        verdict.outcome
    };
    use Outcome::*;
    assert_eq!(decide("a", 0, 10_000), Accepted);
    assert_eq!(decide("a", 1, 10_500), Duplicate);
    assert_eq!(decide("b", 2, 8_999), Late); // more than a window behind stream time
    assert_eq!(decide("a", 3, 12_000), Duplicate); // kept for two windows
    assert_eq!(decide("a", 4, 12_001), Accepted); // expired: absent
}

#[test]
fn stream_time_is_written_only_when_it_moves() {
    let (rules, mut state) = (rules(), Map(HashMap::new()));
    let first = decided(rules.decide(&mut state, &event("gcs", "a", None), "gs://b/k", at(0, 50)));
    assert!(first
        .changes
        .contains(&(b"\x00stream-time".to_vec(), b"50".to_vec())));
    state.apply(&first);
    let older = decided(rules.decide(&mut state, &event("gcs", "b", None), "gs://b/k", at(1, 40)));
    assert!(!older
        .changes
        .iter()
        .any(|(key, _)| key == b"\x00stream-time"));
}

#[test]
fn stream_times_are_plain_digits() {
    assert_eq!(parse_stream_time(b"-12"), Ok(-12));
    for odd in [&b""[..], b"+1", b" 1", b"1_0", b"-"] {
        assert_eq!(parse_stream_time(odd), Err(Refused), "{odd:?}");
    }
}
