//! Avro binary primitives for seqgate's flat records (zigzag varints, strings, `["null", T]`
//! unions), with the same refusals as `seqgate/schemas/binary.py`: whatever that module
//! refuses, this one refuses too, and the caller hands the record to the Python rules.

/// The bytes do not hold what the schema says, or hold it in a form the Python fast reader
/// does not vouch for.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused;

pub type Read<T> = Result<T, Refused>;

/// A cursor over one record's body.
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8], pos: usize) -> Self {
        Reader { data, pos }
    }

    /// A zigzag varint of at most 10 bytes (`binary._varint`).
    pub fn long(&mut self) -> Read<i64> {
        let mut result: u64 = 0;
        let mut shift = 0u32;
        loop {
            let byte = *self.data.get(self.pos).ok_or(Refused)?;
            self.pos += 1;
            // Python keeps every bit of a 10th byte (an int has no width); beyond 64 bits
            // its value no longer fits a long, which the readers refuse.
            let low = u64::from(byte & 0x7F);
            if shift == 63 && low > 1 {
                return Err(Refused);
            }
            result |= low << shift;
            if byte < 0x80 {
                break;
            }
            shift += 7;
            if shift > 63 {
                return Err(Refused);
            }
        }
        Ok(((result >> 1) as i64) ^ -((result & 1) as i64))
    }

    /// An Avro `int`: a long within the 32-bit range.
    pub fn int(&mut self) -> Read<i32> {
        i32::try_from(self.long()?).map_err(|_| Refused)
    }

    pub fn string(&mut self) -> Read<&'a str> {
        let length = usize::try_from(self.long()?).map_err(|_| Refused)?;
        let end = self.pos.checked_add(length).ok_or(Refused)?;
        let bytes = self.data.get(self.pos..end).ok_or(Refused)?;
        self.pos = end;
        std::str::from_utf8(bytes).map_err(|_| Refused)
    }

    /// The branch of a `["null", T]` union: false for null, true for T.
    fn branch(&mut self) -> Read<bool> {
        match self.data.get(self.pos) {
            Some(0) => {
                self.pos += 1;
                Ok(false)
            }
            Some(2) => {
                self.pos += 1;
                Ok(true)
            }
            _ => Err(Refused),
        }
    }

    pub fn optional_string(&mut self) -> Read<Option<&'a str>> {
        if self.branch()? {
            self.string().map(Some)
        } else {
            Ok(None)
        }
    }

    pub fn optional_long(&mut self) -> Read<Option<i64>> {
        if self.branch()? {
            self.long().map(Some)
        } else {
            Ok(None)
        }
    }

    /// The record must end exactly here.
    pub fn end(&self) -> Read<()> {
        if self.pos == self.data.len() {
            Ok(())
        } else {
            Err(Refused)
        }
    }
}

pub fn write_long(out: &mut Vec<u8>, value: i64) {
    let mut number = ((value << 1) ^ (value >> 63)) as u64;
    while number >= 0x80 {
        out.push((number as u8 & 0x7F) | 0x80);
        number >>= 7;
    }
    out.push(number as u8);
}

pub fn write_string(out: &mut Vec<u8>, value: &str) {
    write_long(out, value.len() as i64);
    out.extend_from_slice(value.as_bytes());
}

pub fn write_optional_string(out: &mut Vec<u8>, value: Option<&str>) {
    match value {
        None => out.push(0),
        Some(text) => {
            out.push(2);
            write_string(out, text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long_bytes(value: i64) -> Vec<u8> {
        let mut out = Vec::new();
        write_long(&mut out, value);
        out
    }

    #[test]
    fn longs_round_trip_at_every_width() {
        for value in [
            0,
            -1,
            1,
            63,
            -64,
            64,
            8191,
            8192,
            i64::from(i32::MAX),
            i64::MIN,
            i64::MAX,
        ] {
            let bytes = long_bytes(value);
            let mut reader = Reader::new(&bytes, 0);
            assert_eq!(reader.long(), Ok(value));
            assert_eq!(reader.end(), Ok(()));
        }
    }

    #[test]
    fn zigzag_matches_the_avro_specification() {
        assert_eq!(long_bytes(0), [0]);
        assert_eq!(long_bytes(-1), [1]);
        assert_eq!(long_bytes(1), [2]);
        assert_eq!(long_bytes(-64), [0x7F]);
        assert_eq!(long_bytes(64), [0x80, 0x01]);
    }

    #[test]
    fn an_eleventh_varint_byte_or_a_value_past_64_bits_is_refused() {
        let eleven = [0xFF; 10]
            .iter()
            .chain([0x01].iter())
            .copied()
            .collect::<Vec<u8>>();
        assert_eq!(Reader::new(&eleven, 0).long(), Err(Refused));
        let mut past = vec![0xFF; 9];
        past.push(0x02); // a 65th bit
        assert_eq!(Reader::new(&past, 0).long(), Err(Refused));
    }

    #[test]
    fn strings_refuse_bad_utf8_negative_lengths_and_truncation() {
        assert_eq!(Reader::new(&[4, 0xC3, 0x28], 0).string(), Err(Refused));
        assert_eq!(Reader::new(&[1, b'a'], 0).string(), Err(Refused));
        assert_eq!(Reader::new(&[6, b'a'], 0).string(), Err(Refused));
        assert_eq!(Reader::new(&[2, b'a'], 0).string(), Ok("a"));
    }

    #[test]
    fn a_union_branch_other_than_null_or_the_value_is_refused() {
        assert_eq!(
            Reader::new(&[4, 2, b'a'], 0).optional_string(),
            Err(Refused)
        );
        assert_eq!(Reader::new(&[0], 0).optional_string(), Ok(None));
    }
}
