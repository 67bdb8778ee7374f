//! A received body read into events, through the envelopes around them: the dispatch of
//! `seqgate/connectors/parsers/normalize.py` and the envelope rules of
//! `records_document.py` and `s3/envelopes.py`, for the bodies where every notification
//! inside becomes events.
//!
//! The same recognizers in the same order: a `Records` document (native S3 records, or
//! Lambda SQS or SNS records, each of them an envelope), an SNS message, an SQS
//! `ReceiveMessage` response, an EventBridge event. An envelope's inner document is a JSON
//! text of its own, decoded as strictly and dispatched again, at most `MAX_ENVELOPES`
//! envelopes deep. Anything else — a document of another shape, an `Event` (the S3 test
//! event), a handshake, an empty batch, a `Records` document mixing S3 records with
//! envelopes, one notification the rules hand back — hands the whole body back.

use crate::avro::{Read, Refused};
use crate::json::{self, Value};
use crate::s3::{Rules, S3Event};

/// `normalize.MAX_ENVELOPE_DEPTH`.
pub const MAX_ENVELOPES: usize = 4;

const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";
const LAMBDA_SQS: &str = "aws:sqs";
const LAMBDA_SNS: &str = "aws:sns";

/// What reads one body: the rules, `json_fields.MAX_JSON_DEPTH` per JSON text, and the
/// origin every event carries.
pub struct Reading<'r> {
    pub rules: &'r Rules,
    pub max_json_depth: usize,
    pub origin: &'r str,
}

impl Reading<'_> {
    /// Hands each event of `body` (a received body) to `sink`, in the order the Python
    /// parsers list them; `Refused` (the sink's events then count for nothing) when those
    /// parsers must read it, or when `sink` refuses an event.
    pub fn body(&self, body: &[u8], sink: &mut impl FnMut(&S3Event<'_>) -> Read<()>) -> Read<()> {
        if self.origin.len() > self.rules.text_limits[10] {
            return Err(Refused); // every event carries it: the field limits word it
        }
        let body = body.strip_prefix(UTF8_BOM).unwrap_or(body);
        let text = std::str::from_utf8(body).map_err(|_| Refused)?;
        self.document(&json::parse(text, self.max_json_depth)?, 0, sink)
    }

    /// `normalize_text`: an envelope's inner JSON text, `depth` envelopes deep.
    fn inner(
        &self,
        text: &str,
        depth: usize,
        sink: &mut impl FnMut(&S3Event<'_>) -> Read<()>,
    ) -> Read<()> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        self.document(&json::parse(text, self.max_json_depth)?, depth, sink)
    }

    /// `normalize_document`: the first recognizer that matches reads the document.
    fn document(
        &self,
        document: &Value<'_>,
        depth: usize,
        sink: &mut impl FnMut(&S3Event<'_>) -> Read<()>,
    ) -> Read<()> {
        if depth > MAX_ENVELOPES || !matches!(document, Value::Object(_)) {
            return Err(Refused);
        }
        let has = |name: &str| document.get(name).is_some();
        if has("Records") || has("Event") {
            self.records(document, depth, sink)
        } else if has("Type") && (has("TopicArn") || has("Message")) {
            self.sns_message(document, depth, sink)
        } else if has("Messages") {
            self.receive_response(document, depth, sink)
        } else if has("detail-type") || (has("detail") && has("source")) {
            sink(&self.rules.eventbridge_event(document)?)
        } else {
            Err(Refused)
        }
    }

    /// `parse_records_document`: all native S3 records, or all envelopes.
    fn records(
        &self,
        document: &Value<'_>,
        depth: usize,
        sink: &mut impl FnMut(&S3Event<'_>) -> Read<()>,
    ) -> Read<()> {
        let Some(Value::Array(records)) = document.get("Records") else {
            return Err(Refused);
        };
        let envelopes = records.iter().filter(|r| envelope_of(r).is_some()).count();
        if envelopes == 0 {
            return self.rules.events(document)?.iter().try_for_each(sink);
        }
        if envelopes != records.len() || document.get("Event").is_some() {
            return Err(Refused); // a mix: the Python parser masks and numbers them
        }
        for record in records {
            match envelope_of(record) {
                // parse_lambda_sqs_record: its `body`, one envelope deeper.
                Some(LAMBDA_SQS) => match record.get("body") {
                    Some(Value::Str(body)) => self.inner(body, depth + 1, sink)?,
                    _ => return Err(Refused),
                },
                // parse_lambda_sns_record: its `Sns`, an SNS message at this depth.
                _ => match record.get("Sns") {
                    Some(sns @ Value::Object(_)) => self.sns_message(sns, depth, sink)?,
                    _ => return Err(Refused),
                },
            }
        }
        Ok(())
    }

    /// `parse_sns_message`: a `Notification`'s `Message`, one envelope deeper (a
    /// handshake is ignored with a note: Python's).
    fn sns_message(
        &self,
        message: &Value<'_>,
        depth: usize,
        sink: &mut impl FnMut(&S3Event<'_>) -> Read<()>,
    ) -> Read<()> {
        if message.get("Type").and_then(Value::as_str) != Some("Notification") {
            return Err(Refused);
        }
        match message.get("Message") {
            Some(Value::Str(text)) => self.inner(text, depth + 1, sink),
            _ => Err(Refused),
        }
    }

    /// `parse_sqs_receive_response`: every message's `Body`, one envelope deeper.
    fn receive_response(
        &self,
        document: &Value<'_>,
        depth: usize,
        sink: &mut impl FnMut(&S3Event<'_>) -> Read<()>,
    ) -> Read<()> {
        let Some(Value::Array(messages)) = document.get("Messages") else {
            return Err(Refused);
        };
        if messages.is_empty() {
            return Err(Refused);
        }
        for message in messages {
            match message.get("Body") {
                Some(Value::Str(body)) => self.inner(body, depth + 1, sink)?,
                _ => return Err(Refused),
            }
        }
        Ok(())
    }
}

/// `records_document._record_source`: which envelope a `Records` member is, if any.
fn envelope_of(record: &Value<'_>) -> Option<&'static str> {
    if record.get("eventSource").and_then(Value::as_str) == Some(LAMBDA_SQS) {
        Some(LAMBDA_SQS)
    } else if record.get("EventSource").and_then(Value::as_str) == Some(LAMBDA_SNS) {
        Some(LAMBDA_SNS)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::s3::tests::rules;

    const RECORDS: &str = r#"{"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"k","sequencer":"1"}}}]}"#;
    const EVENTBRIDGE: &str = r#"{"version":"0","id":"e1","detail-type":"Object Created","source":"aws.s3","detail":{"bucket":{"name":"b"},"object":{"key":"k","sequencer":"2"}}}"#;

    /// A JSON string literal holding `text`.
    fn quoted(text: &str) -> String {
        let mut out = String::from('"');
        for c in text.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    fn sns(message: &str) -> String {
        format!(
            r#"{{"Type":"Notification","TopicArn":"t","Message":{}}}"#,
            quoted(message)
        )
    }

    fn sqs(bodies: &[&str]) -> String {
        let messages: Vec<String> = bodies
            .iter()
            .map(|body| format!(r#"{{"MessageId":"m","Body":{}}}"#, quoted(body)))
            .collect();
        format!(r#"{{"Messages":[{}]}}"#, messages.join(","))
    }

    /// The positions of the events read from `body`, or None when it is handed back.
    fn positions(body: &str) -> Option<Vec<String>> {
        let rules = rules();
        let reading = Reading {
            rules: &rules,
            max_json_depth: 64,
            origin: "test",
        };
        let mut seen = Vec::new();
        reading
            .body(body.as_bytes(), &mut |event| {
                seen.push(event.position.to_string());
                Ok(())
            })
            .ok()?;
        Some(seen)
    }

    #[test]
    fn every_envelope_is_unwrapped_in_order() {
        assert_eq!(positions(RECORDS).unwrap(), ["1"]);
        assert_eq!(positions(EVENTBRIDGE).unwrap(), ["2"]);
        assert_eq!(positions(&sns(RECORDS)).unwrap(), ["1"]);
        let batch = sqs(&[RECORDS, EVENTBRIDGE, &sns(EVENTBRIDGE)]);
        assert_eq!(positions(&batch).unwrap(), ["1", "2", "2"]);
        let lambda = format!(
            r#"{{"Records":[{{"eventSource":"aws:sqs","body":{}}},{{"EventSource":"aws:sns","Sns":{}}}]}}"#,
            quoted(RECORDS),
            sns(EVENTBRIDGE)
        );
        assert_eq!(positions(&lambda).unwrap(), ["1", "2"]);
    }

    #[test]
    fn at_most_four_envelopes_are_unwrapped() {
        let mut body = RECORDS.to_string();
        for _ in 0..MAX_ENVELOPES {
            body = sns(&body);
        }
        assert!(positions(&body).is_some());
        assert_eq!(positions(&sns(&body)), None);
    }

    #[test]
    fn hands_back_what_python_rejects_ignores_or_numbers() {
        let handshake = r#"{"Type":"SubscriptionConfirmation","TopicArn":"t","Message":"m"}"#;
        let mixed = format!(
            r#"{{"Records":[{{"eventSource":"aws:sqs","body":{}}},{}]}}"#,
            quoted(RECORDS),
            &RECORDS[12..RECORDS.len() - 2]
        );
        for body in [
            handshake.to_string(),
            sqs(&[]),
            sqs(&[RECORDS, handshake]),
            sqs(&[RECORDS, "{"]),
            r#"{"Messages":[{"Body":1}]}"#.to_string(),
            r#"{"Messages":[1]}"#.to_string(),
            r#"{"Records":[{"eventSource":"aws:sqs","body":{}}]}"#.to_string(),
            r#"{"Records":[{"EventSource":"aws:sns","Sns":"m"}]}"#.to_string(),
            mixed,
            r#"{"kind":"storage#object"}"#.to_string(),
            "[]".to_string(),
        ] {
            assert_eq!(positions(&body), None, "{body}");
        }
        let long_origin = "o".repeat(4353);
        let rules = rules();
        let reading = Reading {
            rules: &rules,
            max_json_depth: 64,
            origin: &long_origin,
        };
        assert!(reading.body(RECORDS.as_bytes(), &mut |_| Ok(())).is_err());
    }
}
