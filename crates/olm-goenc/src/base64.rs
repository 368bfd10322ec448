//! Go's `encoding/base64.StdEncoding`: what `encoding/json` reads into a `[]byte` field, so what
//! opm accepts as a package icon and how it writes it back.
//!
//! Go's decoder is not the strict RFC 4648 one most libraries offer: it skips `\r` and `\n`
//! anywhere (base64 wrapped at 76 columns, a YAML `|` block's final newline), ignores non-zero
//! bits after the last full byte (`QR==` is `A`), and requires padding. Its errors name the
//! offset in the original text, as `illegal base64 data at input byte N`.

use ::base64::Engine as _;

/// Why Go's decoder refused the text: the offset it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("illegal base64 data at input byte {0}")]
pub struct CorruptInputError(pub usize);

const PAD: u8 = b'=';

fn value(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

fn is_newline(c: u8) -> bool {
    c == b'\n' || c == b'\r'
}

/// Decodes as `base64.StdEncoding.DecodeString` does, with its error offsets.
pub fn decode_std(src: &[u8]) -> Result<Vec<u8>, CorruptInputError> {
    let mut out = Vec::with_capacity(src.len() / 4 * 3);
    let mut si = 0;
    while si < src.len() {
        let (next, done) = quantum(src, si, &mut out)?;
        si = next;
        if done {
            break;
        }
    }
    Ok(out)
}

/// One group of four symbols (Go's `decodeQuantum`), starting at `si`: its bytes are pushed to
/// `out`; returns where the next group starts and whether the text has ended (padding seen).
fn quantum(
    src: &[u8],
    mut si: usize,
    out: &mut Vec<u8>,
) -> Result<(usize, bool), CorruptInputError> {
    let mut buf = [0u8; 4];
    let mut len = 4;
    let mut j = 0;
    let mut ended = false;
    while j < 4 {
        let Some(&c) = src.get(si) else {
            if j == 0 {
                return Ok((si, true));
            }
            // Padding is required: a short last group is an error at its start.
            return Err(CorruptInputError(si - j));
        };
        si += 1;
        if let Some(v) = value(c) {
            buf[j] = v;
            j += 1;
            continue;
        }
        if is_newline(c) {
            continue;
        }
        if c != PAD || j < 2 {
            return Err(CorruptInputError(si - 1));
        }
        if j == 2 {
            // `==` is expected; the first `=` is consumed.
            while src.get(si).copied().is_some_and(is_newline) {
                si += 1;
            }
            match src.get(si) {
                None => return Err(CorruptInputError(src.len())),
                Some(&c) if c != PAD => return Err(CorruptInputError(si - 1)),
                Some(_) => si += 1,
            }
        }
        while src.get(si).copied().is_some_and(is_newline) {
            si += 1;
        }
        if si < src.len() {
            return Err(CorruptInputError(si));
        }
        len = j;
        ended = true;
        break;
    }
    let v = u32::from(buf[0]) << 18
        | u32::from(buf[1]) << 12
        | u32::from(buf[2]) << 6
        | u32::from(buf[3]);
    let bytes = [(v >> 16) as u8, (v >> 8) as u8, v as u8];
    out.extend_from_slice(&bytes[..len - 1]);
    Ok((si, ended))
}

/// Encodes as `base64.StdEncoding.EncodeToString`: one padded line.
pub fn encode_std(bytes: &[u8]) -> String {
    ::base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The text Go writes back after reading `s` into bytes: [`encode_std`] of [`decode_std`].
pub fn reencode_std(s: &str) -> Result<String, CorruptInputError> {
    decode_std(s.as_bytes()).map(|b| encode_std(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expectations from Go 1.26's `base64.StdEncoding.DecodeString` (values and error offsets).
    #[test]
    fn decodes_as_go_does() {
        let ok: &[(&str, &[u8])] = &[
            ("", b""),
            ("QQ==", b"A"),
            ("QUI=", b"AB"),
            ("QUJD", b"ABC"),
            // Non-zero bits after the last byte are ignored (not Strict()).
            ("QR==", b"A"),
            ("QUJ=", b"AB"),
            // Newlines anywhere, also inside the padding and after it.
            ("QU\nJD\r\n", b"ABC"),
            ("QQ=\n=\n", b"A"),
            ("\nQUJDRA==\n", b"ABCD"),
        ];
        for (text, want) in ok {
            assert_eq!(
                decode_std(text.as_bytes()).as_deref(),
                Ok(*want),
                "{text:?}"
            );
        }
        let bad: &[(&str, usize)] = &[
            ("QUJ", 0),
            ("Q", 0),
            ("QUJDR", 4),
            ("QU JD", 2),
            ("Q===", 1),
            ("QQ=", 3),
            ("QQ=x", 2),
            ("QQ==QUJD", 4),
            ("QUI=\nx", 5),
            ("QU\nJ", 1),
        ];
        for (text, at) in bad {
            assert_eq!(
                decode_std(text.as_bytes()),
                Err(CorruptInputError(*at)),
                "{text:?}"
            );
        }
        assert_eq!(
            CorruptInputError(7).to_string(),
            "illegal base64 data at input byte 7"
        );
    }

    #[test]
    fn reencodes_wrapped_text_as_one_line() {
        let wrapped = "QUJDREVG\nR0hJ\n";
        assert_eq!(reencode_std(wrapped).as_deref(), Ok("QUJDREVGR0hJ"));
        assert_eq!(reencode_std("QR==").as_deref(), Ok("QQ=="));
    }
}
