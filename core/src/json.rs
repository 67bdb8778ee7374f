//! A strict JSON reader for the bridge's compiled path: the documents
//! `seqgate/connectors/parsers/strict_json.py` accepts, read into borrowed values.
//!
//! It never words a refusal: whatever it does not accept is handed back (`Refused`) to the
//! Python decoder, which decides and explains. So it may refuse more than Python does (a
//! number literal longer than [`MAX_NUMBER_LEN`], a lone surrogate escape), never less,
//! and every value it accepts is the one Python's `json.loads` would give:
//! RFC 8259's grammar, no NaN or Infinity, no control character in a string, no member
//! name twice in one object, at most `max_depth` levels of arrays and objects (Python's
//! `json_fields.MAX_JSON_DEPTH`, given by the caller: the top-level value is level 1).

use std::borrow::Cow;

use crate::avro::{Read, Refused};

/// Longer number literals go back to Python, which refuses integers of more than 4,300
/// digits and whose float conversion this reader does not need to follow.
pub const MAX_NUMBER_LEN: usize = 64;

/// One JSON value; strings without escapes borrow the text.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    /// The literal as written (`-0`, `12`, `1.5e3`): only its reader knows what it needs.
    Number(&'a str),
    Str(Cow<'a, str>),
    Array(Vec<Value<'a>>),
    Object(Vec<(Cow<'a, str>, Value<'a>)>),
}

impl<'a> Value<'a> {
    /// The member `name` of an object (None: absent, or this is not an object).
    pub fn get(&self, name: &str) -> Option<&Value<'a>> {
        match self {
            Value::Object(members) => members
                .iter()
                .find(|(member, _)| member == name)
                .map(|(_, value)| value),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(text) => Some(text),
            _ => None,
        }
    }
}

/// The document of `body`, a whole JSON text (UTF-8 already checked), nesting arrays and
/// objects at most `max_depth` levels deep.
pub fn parse(body: &str, max_depth: usize) -> Read<Value<'_>> {
    let mut parser = Parser {
        text: body,
        bytes: body.as_bytes(),
        pos: 0,
        max_depth,
    };
    parser.whitespace();
    let value = parser.value(1)?;
    parser.whitespace();
    if parser.pos != parser.bytes.len() {
        return Err(Refused);
    }
    Ok(value)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    max_depth: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Read<()> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(Refused)
        }
    }

    fn literal(&mut self, word: &[u8]) -> Read<()> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Refused)
        }
    }

    fn value(&mut self, depth: usize) -> Read<Value<'a>> {
        match self.peek().ok_or(Refused)? {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' => Ok(Value::Str(self.string()?)),
            b't' => self.literal(b"true").map(|()| Value::Bool(true)),
            b'f' => self.literal(b"false").map(|()| Value::Bool(false)),
            b'n' => self.literal(b"null").map(|()| Value::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(Refused),
        }
    }

    fn object(&mut self, depth: usize) -> Read<Value<'a>> {
        if depth > self.max_depth {
            return Err(Refused);
        }
        self.pos += 1;
        let mut members: Vec<(Cow<'a, str>, Value<'a>)> = Vec::with_capacity(8);
        self.whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(members));
        }
        loop {
            self.whitespace();
            if self.peek() != Some(b'"') {
                return Err(Refused);
            }
            let name = self.string()?;
            if members.iter().any(|(seen, _)| *seen == name) {
                return Err(Refused); // a repeated name: Python words the refusal
            }
            self.whitespace();
            self.expect(b':')?;
            self.whitespace();
            let value = self.value(depth + 1)?;
            members.push((name, value));
            self.whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(members));
                }
                _ => return Err(Refused),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Read<Value<'a>> {
        if depth > self.max_depth {
            return Err(Refused);
        }
        self.pos += 1;
        let mut items = Vec::new();
        self.whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.whitespace();
            items.push(self.value(depth + 1)?);
            self.whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(Refused),
            }
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?`, as Python's scanner reads it.
    fn number(&mut self) -> Read<Value<'a>> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(Refused),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            self.required_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            self.required_digits()?;
        }
        if self.pos - start > MAX_NUMBER_LEN {
            return Err(Refused);
        }
        Ok(Value::Number(&self.text[start..self.pos]))
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }

    fn required_digits(&mut self) -> Read<()> {
        let start = self.pos;
        self.digits();
        if self.pos == start {
            Err(Refused)
        } else {
            Ok(())
        }
    }

    /// A string at `"`: borrowed when it holds no escape.
    fn string(&mut self) -> Read<Cow<'a, str>> {
        self.pos += 1;
        let start = self.pos;
        // One scan to the first quote, backslash or control character (strict JSON).
        let rest = &self.bytes[start..];
        let stop = rest
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            .ok_or(Refused)?;
        self.pos = start + stop;
        match rest[stop] {
            b'"' => {
                self.pos += 1;
                return Ok(Cow::Borrowed(&self.text[start..start + stop]));
            }
            b'\\' => {}
            _ => return Err(Refused),
        }
        let mut owned = String::from(&self.text[start..self.pos]);
        loop {
            match self.peek().ok_or(Refused)? {
                b'"' => {
                    self.pos += 1;
                    return Ok(Cow::Owned(owned));
                }
                b'\\' => {
                    self.pos += 1;
                    self.escape(&mut owned)?;
                }
                0x00..=0x1F => return Err(Refused),
                _ => {
                    // Copy the run up to the next quote or backslash, whole characters.
                    let run = self.pos;
                    while let Some(byte) = self.peek() {
                        if byte == b'"' || byte == b'\\' || byte < 0x20 {
                            break;
                        }
                        self.pos += 1;
                    }
                    owned.push_str(&self.text[run..self.pos]);
                }
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Read<()> {
        let byte = self.peek().ok_or(Refused)?;
        self.pos += 1;
        let decoded = match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => self.unicode_escape()?,
            _ => return Err(Refused),
        };
        out.push(decoded);
        Ok(())
    }

    /// `\uXXXX`, or a surrogate pair of two; a lone surrogate (which Python keeps, and
    /// later refuses as not text) is handed back.
    fn unicode_escape(&mut self) -> Read<char> {
        let first = self.hex4()?;
        if (0xD800..0xDC00).contains(&first) {
            if !self.bytes[self.pos..].starts_with(b"\\u") {
                return Err(Refused);
            }
            self.pos += 2;
            let second = self.hex4()?;
            if !(0xDC00..0xE000).contains(&second) {
                return Err(Refused);
            }
            let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
            return char::from_u32(code).ok_or(Refused);
        }
        char::from_u32(first).ok_or(Refused) // None for a lone low surrogate
    }

    fn hex4(&mut self) -> Read<u32> {
        let digits = self.bytes.get(self.pos..self.pos + 4).ok_or(Refused)?;
        let mut value = 0u32;
        for digit in digits {
            let nibble = (*digit as char).to_digit(16).ok_or(Refused)?;
            value = value * 16 + nibble;
        }
        self.pos += 4;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `json_fields.MAX_JSON_DEPTH`.
    const MAX_DEPTH: usize = 64;

    fn parse(text: &str) -> Read<Value<'_>> {
        super::parse(text, MAX_DEPTH)
    }

    fn ok(text: &str) -> Value<'_> {
        parse(text).expect(text)
    }

    #[test]
    fn reads_every_kind_of_value() {
        let doc = ok(r#" {"a": [1, -0, 2.5e-3, true, false, null], "b": {"c": "d"}} "#);
        let a = doc.get("a").unwrap();
        assert_eq!(
            a,
            &Value::Array(vec![
                Value::Number("1"),
                Value::Number("-0"),
                Value::Number("2.5e-3"),
                Value::Bool(true),
                Value::Bool(false),
                Value::Null,
            ])
        );
        assert_eq!(doc.get("b").unwrap().get("c").unwrap().as_str(), Some("d"));
    }

    #[test]
    fn unescapes_strings_and_pairs_surrogates() {
        let doc = ok(r#"{"k": "a\"b\\c\/d\n\u00e9\ud83d\ude00"}"#);
        assert_eq!(doc.get("k").unwrap().as_str(), Some("a\"b\\c/d\né😀"));
    }

    #[test]
    fn hands_back_what_python_refuses_or_words() {
        for text in [
            "",
            "{",
            r#"{"a": 1,}"#,
            "[1 2]",
            "NaN",
            "Infinity",
            "-Infinity",
            "01",
            "1.",
            ".5",
            "1e",
            "+1",
            r#"{"a": 1, "a": 2}"#,
            "\"tab\there\"",
            r#""\x""#,
            r#""\ud800""#,
            r#""\udc00""#,
            r#""\ud800\u0041""#,
            "{} {}",
            "\u{feff}{}",
            "'a'",
            "tru",
        ] {
            assert!(parse(text).is_err(), "{text:?} accepted");
        }
    }

    #[test]
    fn bounds_depth_and_number_length() {
        let deep_ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(&deep_ok).is_ok());
        let too_deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(parse(&too_deep).is_err());
        assert!(parse(&"9".repeat(MAX_NUMBER_LEN)).is_ok());
        assert!(parse(&"9".repeat(MAX_NUMBER_LEN + 1)).is_err());
    }
}
