//! The two position orders of `seqgate/schemas/ordering.py`: each position reduced to a
//! canonical form, canonical forms compared directly. Invalid positions are Refused (the
//! Python rules dead-letter them, with their reason).

use std::cmp::Ordering;

use crate::avro::{Read, Refused};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// AWS's rule: right-pad with `0`, compare case-insensitively.
    Aws,
    /// The numeric value of the hex string.
    Numeric,
}

impl Order {
    pub fn named(name: &str) -> Option<Order> {
        match name {
            "aws" => Some(Order::Aws),
            "numeric" => Some(Order::Numeric),
            _ => None,
        }
    }

    /// The canonical form's bytes, lowercased; Refused unless non-empty ASCII hex.
    pub fn canonical(self, position: &str) -> Read<Vec<u8>> {
        let bytes = position.as_bytes();
        if bytes.is_empty() || !bytes.iter().all(u8::is_ascii_hexdigit) {
            return Err(Refused);
        }
        let trimmed = match self {
            Order::Aws => &bytes[..bytes.iter().rposition(|&b| b != b'0').map_or(0, |i| i + 1)],
            Order::Numeric => {
                &bytes[bytes.iter().position(|&b| b != b'0').unwrap_or(bytes.len())..]
            }
        };
        Ok(if trimmed.is_empty() {
            vec![b'0']
        } else {
            trimmed.to_ascii_lowercase()
        })
    }

    /// Whether `position` is valid for this order.
    pub fn check(self, position: &str) -> Read<()> {
        self.canonical(position).map(|_| ())
    }

    /// How `a` stands to `b`: later (Greater), the same write (Equal) or earlier (Less).
    pub fn compare(self, a: &str, b: &str) -> Read<Ordering> {
        let (ca, cb) = (self.canonical(a)?, self.canonical(b)?);
        Ok(match self {
            Order::Aws => ca.cmp(&cb),
            Order::Numeric => ca.len().cmp(&cb.len()).then_with(|| ca.cmp(&cb)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Order::{Aws, Numeric};
    use super::*;

    #[test]
    fn the_guides_example_under_both_orders() {
        // f, 000F, e, 10 (docs/design.md §3).
        assert_eq!(Aws.compare("000F", "f"), Ok(Ordering::Less));
        assert_eq!(Numeric.compare("000F", "f"), Ok(Ordering::Equal));
        assert_eq!(Aws.compare("f", "10"), Ok(Ordering::Greater));
        assert_eq!(Numeric.compare("10", "f"), Ok(Ordering::Greater));
        assert_eq!(Aws.compare("f", "F0"), Ok(Ordering::Equal));
        assert_eq!(Aws.compare("e", "f"), Ok(Ordering::Less));
    }

    #[test]
    fn zero_in_any_spelling_is_zero() {
        assert_eq!(Aws.compare("000", "0"), Ok(Ordering::Equal));
        assert_eq!(Numeric.compare("000", "0"), Ok(Ordering::Equal));
    }

    #[test]
    fn only_non_empty_ascii_hex_is_a_position() {
        for bad in ["", "g", "0x1", " 1", "١"] {
            assert_eq!(Aws.check(bad), Err(Refused), "{bad:?}");
            assert_eq!(Numeric.check(bad), Err(Refused), "{bad:?}");
        }
    }
}
