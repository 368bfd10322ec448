//! Canonical JSON: the byte form operator-registry gives every blob (keys sorted byte-wise at every level,
//! compact, no HTML escaping, numbers as Go's `float64` encoder prints them). catalogd's `catalog.jsonl`
//! is exactly these blobs, one per line, so producing them while parsing means the JSONL writer is a copy.
//!
//! The conversion is a serde visitor, so JSON documents (serde_json) are turned into canonical text
//! in one pass without building a tree; YAML documents arrive as canonical text from the reader, or
//! as `serde_json::Value`s where it needed its full parser, which this visitor converts too.

use std::fmt;

use olm_goenc::json::{write_f64, write_str};
use olm_goenc::quote;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// A [`DeserializeSeed`] that appends the canonical JSON of whatever it is fed to a buffer.
pub struct Canon<'a>(pub &'a mut String);

impl<'de> DeserializeSeed<'de> for Canon<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Canon<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.0.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        olm_goenc::json::write_i64_through_float64(self.0, v);
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        olm_goenc::json::write_u64_through_float64(self.0, v);
        Ok(())
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<(), E> {
        write_f64(self.0, v as f64).map_err(E::custom)
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<(), E> {
        write_f64(self.0, v as f64).map_err(E::custom)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        write_f64(self.0, v).map_err(E::custom)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        write_str(self.0, v);
        Ok(())
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<(), E> {
        use base64::Engine;
        write_str(self.0, &base64::engine::general_purpose::STANDARD.encode(v));
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.0.push_str("null");
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.visit_unit()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.push('[');
        let mut first = true;
        loop {
            let mark = self.0.len();
            if !first {
                self.0.push(',');
            }
            match seq.next_element_seed(Canon(&mut *self.0))? {
                Some(()) => first = false,
                None => {
                    self.0.truncate(mark);
                    break;
                }
            }
        }
        self.0.push(']');
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        canon_map(self.0, map, |_, _| {})
    }
}

/// Writes a map canonically; `on_entry(key, value_json)` is called for every entry after sorting.
pub(crate) fn canon_map<'de, A: MapAccess<'de>>(
    out: &mut String,
    mut map: A,
    mut on_entry: impl FnMut(&str, &str),
) -> Result<(), A::Error> {
    let base = out.len();
    out.push('{');
    // (key, start of `"key":value`, end) for each entry, in input order.
    let mut entries: Vec<(String, usize, usize)> = Vec::new();
    let mut sorted = true;
    // Keys seen so far, built only once the input turns out not to be sorted (sorted input cannot
    // repeat a key without the `>=` check below noticing).
    let mut seen: Option<std::collections::HashSet<String>> = None;
    while let Some(key) = map.next_key_seed(KeySeed)? {
        // Reject a repeated key right away so the parser's position (the error's line) is the key's.
        let repeated = match entries.last() {
            Some(last) if last.0.as_str() >= key.as_str() => {
                let set = seen.get_or_insert_with(|| entries.iter().map(|e| e.0.clone()).collect());
                !set.insert(key.clone())
            }
            _ => {
                if let Some(set) = seen.as_mut() {
                    set.insert(key.clone());
                }
                false
            }
        };
        if repeated {
            return Err(de::Error::custom(format!("duplicate key {}", quote(&key))));
        }
        if !entries.is_empty() {
            out.push(',');
        }
        let start = out.len();
        write_str(out, &key);
        out.push(':');
        map.next_value_seed(Canon(&mut *out))?;
        if let Some(last) = entries.last()
            && last.0.as_str() >= key.as_str()
        {
            sorted = false;
        }
        entries.push((key, start, out.len()));
    }
    if !sorted {
        let mut order: Vec<usize> = (0..entries.len()).collect();
        order.sort_by(|&a, &b| entries[a].0.cmp(&entries[b].0));
        for w in order.windows(2) {
            if entries[w[0]].0 == entries[w[1]].0 {
                return Err(de::Error::custom(format!(
                    "duplicate key {}",
                    quote(&entries[w[0]].0)
                )));
            }
        }
        let mut buf = String::with_capacity(out.len() - base);
        buf.push('{');
        for (n, &i) in order.iter().enumerate() {
            if n > 0 {
                buf.push(',');
            }
            buf.push_str(&out[entries[i].1..entries[i].2]);
        }
        out.truncate(base);
        out.push_str(&buf);
        // Recompute spans for the callback over the rebuilt text.
        let mut pos = base + 1;
        for &i in &order {
            let len = entries[i].2 - entries[i].1;
            let kv = &out[pos..pos + len];
            let vstart = json_key_len(kv) + 1;
            on_entry(&entries[i].0, &kv[vstart..]);
            pos += len + 1;
        }
    } else {
        for (k, s, e) in &entries {
            let kv = &out[*s..*e];
            let vstart = json_key_len(kv) + 1;
            on_entry(k, &kv[vstart..]);
        }
    }
    out.push('}');
    Ok(())
}

/// Length of the leading JSON string literal in `s` (which starts with `"`).
fn json_key_len(s: &str) -> usize {
    let b = s.as_bytes();
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// Map keys: YAML allows non-string keys; sigs.k8s.io/yaml turns them into their string form.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        let mut s = String::new();
        write_f64(&mut s, v).map_err(E::custom)?;
        Ok(s)
    }
    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        Ok("null".to_owned())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_none<E: de::Error>(self) -> Result<String, E> {
        Ok("null".to_owned())
    }
}

/// The top-level document: must be a map. Collects the raw canonical text and, for each top-level key,
/// the canonical text of its value, so `schema`/`package`/`name` can be found case-insensitively.
pub(crate) struct TopSeed<'a> {
    pub out: &'a mut String,
    pub keys: &'a mut Vec<(String, String)>,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let keys = self.keys;
        canon_map(self.out, map, |k, v| {
            // Only short values are interesting (schema/package/name); skip copying big ones.
            let v = if v.len() <= 4096 {
                v.to_owned()
            } else {
                String::new()
            };
            keys.push((k.to_owned(), v))
        })
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.out.push_str("null");
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.visit_unit()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    // Non-objects are recorded as they are; the caller reports them with upstream's wording.
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        Canon(self.out).visit_seq(seq)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        Canon(self.out).visit_bool(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        Canon(self.out).visit_i64(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        Canon(self.out).visit_u64(v)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        Canon(self.out).visit_f64(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        Canon(self.out).visit_str(v)
    }
}

/// Canonicalises a JSON text (used for values built in memory).
pub fn canonicalize_json(s: &str) -> Result<String, serde_json::Error> {
    let mut out = String::with_capacity(s.len());
    let mut de = serde_json::Deserializer::from_str(s);
    Canon(&mut out).deserialize(&mut de)?;
    de.end()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_keys_and_escapes_like_go() {
        let got =
            canonicalize_json(r#"{"b":1,"a":{"z":"<&>\u2028","y":[1.0,2e3,null,true]}}"#).unwrap();
        assert_eq!(
            got,
            r#"{"a":{"y":[1,2000,null,true],"z":"<&>\u2028"},"b":1}"#
        );
    }

    #[test]
    fn duplicate_keys_are_rejected() {
        assert!(canonicalize_json(r#"{"b":1,"a":2,"b":3}"#).is_err());
    }

    #[test]
    fn big_integers_pass_through_float64() {
        assert_eq!(
            canonicalize_json("[9007199254740993]").unwrap(),
            "[9007199254740992]"
        );
        assert_eq!(
            canonicalize_json("[12345678901234567890123]").unwrap(),
            "[1.2345678901234568e+22]"
        );
    }
}
