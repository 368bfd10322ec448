//! Writers: `opm render` JSON and YAML, and catalogd's canonical JSONL.
//!
//! # Order (JSON and YAML, as upstream)
//! Blobs are grouped by package and the groups written in package-name order. Within a group: the
//! `olm.package` blob(s), channels by name, bundles by name, blobs of other schemas stably sorted by
//! schema, then deprecations in input order. Blobs of other schemas without a package come last.
//! Channels, bundles and deprecations with an empty `package` are dropped, as upstream does.
//!
//! # JSONL
//! One canonical blob per line in catalog order (the order catalogd walks files), each the canonical
//! JSON of the document as loaded: byte-identical to catalogd's `catalog.jsonl`.

use std::io::{self, Write};

use olm_goenc::json::write_str;
use serde_json::value::RawValue;

use crate::canonical::canonicalize_json;
use crate::model::*;
use crate::property::Property;

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Indented JSON documents, as `opm render -o json` writes them.
    Json,
    /// YAML documents separated by `---`, as `opm render -o yaml` writes them.
    Yaml,
    /// One compact JSON blob per line, as catalogd serves `catalog.jsonl`.
    Jsonl,
}

/// Writes a catalog in the given format.
pub fn write(cat: &Catalog, format: Format, w: &mut dyn Write) -> io::Result<()> {
    match format {
        Format::Json => write_json(cat, w),
        Format::Yaml => write_yaml(cat, w),
        Format::Jsonl => write_jsonl(cat, w),
    }
}

/// Renders a catalog to a string.
pub fn to_string(cat: &Catalog, format: Format) -> String {
    let mut buf = Vec::new();
    let _ = write(cat, format, &mut buf);
    String::from_utf8(buf).unwrap_or_default()
}

/// The blobs in upstream's writer order (see the module docs).
pub fn ordered(cat: &Catalog) -> Vec<&Blob> {
    use std::collections::BTreeMap;
    #[derive(Default)]
    struct Group<'a> {
        packages: Vec<&'a Blob>,
        channels: Vec<&'a Blob>,
        bundles: Vec<&'a Blob>,
        others: Vec<&'a Blob>,
        deprecations: Vec<&'a Blob>,
    }
    let mut groups: BTreeMap<&str, Group> = BTreeMap::new();
    let mut loose: Vec<&Blob> = Vec::new();
    for b in &cat.blobs {
        let pkg = b.package();
        match b {
            Blob::Package(_) => groups.entry(pkg).or_default().packages.push(b),
            _ if pkg.is_empty() => {
                if let Blob::Other(_) = b {
                    loose.push(b)
                }
            }
            Blob::Channel(_) => groups.entry(pkg).or_default().channels.push(b),
            Blob::Bundle(_) => groups.entry(pkg).or_default().bundles.push(b),
            Blob::Deprecations(_) => groups.entry(pkg).or_default().deprecations.push(b),
            Blob::Other(_) => groups.entry(pkg).or_default().others.push(b),
        }
    }
    let name = |b: &Blob| -> String {
        match b {
            Blob::Channel(c) => c.name.to_string(),
            Blob::Bundle(x) => x.name.to_string(),
            _ => String::new(),
        }
    };
    let mut out = Vec::with_capacity(cat.blobs.len());
    for (_, mut g) in groups {
        g.channels.sort_by_key(|b| name(b));
        g.bundles.sort_by_key(|b| name(b));
        g.others.sort_by(|a, b| a.schema().cmp(b.schema()));
        out.extend(g.packages);
        out.extend(g.channels);
        out.extend(g.bundles);
        out.extend(g.others);
        out.extend(g.deprecations);
    }
    loose.sort_by(|a, b| a.schema().cmp(b.schema()));
    out.extend(loose);
    out
}

/// Compact JSON of a blob with fields in upstream's struct order (what Go's encoder emits).
pub fn blob_json(b: &Blob) -> String {
    let mut o = String::with_capacity(approx_len(b));
    match b {
        Blob::Package(p) => {
            o.push_str("{\"schema\":\"olm.package\",\"name\":");
            write_str(&mut o, &p.name);
            o.push_str(",\"defaultChannel\":");
            write_str(&mut o, &p.default_channel);
            if let Some(icon) = &p.icon {
                o.push_str(",\"icon\":{\"base64data\":");
                write_str(&mut o, &icon.base64data);
                o.push_str(",\"mediatype\":");
                write_str(&mut o, &icon.mediatype);
                o.push('}');
            }
            if !p.description.is_empty() {
                o.push_str(",\"description\":");
                write_str(&mut o, &p.description);
            }
            props(&mut o, &p.properties);
            o.push('}');
        }
        Blob::Channel(c) => {
            o.push_str("{\"schema\":\"olm.channel\",\"name\":");
            write_str(&mut o, &c.name);
            o.push_str(",\"package\":");
            write_str(&mut o, &c.package);
            o.push_str(",\"entries\":");
            match &c.entries {
                None => o.push_str("null"),
                Some(es) => {
                    o.push('[');
                    for (i, e) in es.iter().enumerate() {
                        if i > 0 {
                            o.push(',');
                        }
                        o.push_str("{\"name\":");
                        write_str(&mut o, &e.name);
                        if !e.replaces.is_empty() {
                            o.push_str(",\"replaces\":");
                            write_str(&mut o, &e.replaces);
                        }
                        if !e.skips.is_empty() {
                            o.push_str(",\"skips\":[");
                            for (j, s) in e.skips.iter().enumerate() {
                                if j > 0 {
                                    o.push(',');
                                }
                                write_str(&mut o, s);
                            }
                            o.push(']');
                        }
                        if !e.skip_range.is_empty() {
                            o.push_str(",\"skipRange\":");
                            write_str(&mut o, &e.skip_range);
                        }
                        o.push('}');
                    }
                    o.push(']');
                }
            }
            props(&mut o, &c.properties);
            o.push('}');
        }
        Blob::Bundle(x) => {
            o.push_str("{\"schema\":\"olm.bundle\",\"name\":");
            write_str(&mut o, &x.name);
            o.push_str(",\"package\":");
            write_str(&mut o, &x.package);
            o.push_str(",\"image\":");
            write_str(&mut o, &x.image);
            props(&mut o, &x.properties);
            if !x.related_images.is_empty() {
                o.push_str(",\"relatedImages\":[");
                for (i, r) in x.related_images.iter().enumerate() {
                    if i > 0 {
                        o.push(',');
                    }
                    o.push_str("{\"name\":");
                    write_str(&mut o, &r.name);
                    o.push_str(",\"image\":");
                    write_str(&mut o, &r.image);
                    o.push('}');
                }
                o.push(']');
            }
            o.push('}');
        }
        Blob::Deprecations(d) => {
            o.push_str("{\"schema\":\"olm.deprecations\",\"package\":");
            write_str(&mut o, &d.package);
            o.push_str(",\"entries\":");
            if d.entries.is_empty() {
                o.push_str("null");
            } else {
                o.push('[');
                for (i, e) in d.entries.iter().enumerate() {
                    if i > 0 {
                        o.push(',');
                    }
                    o.push_str("{\"reference\":{\"schema\":");
                    write_str(&mut o, &e.reference.schema);
                    if !e.reference.name.is_empty() {
                        o.push_str(",\"name\":");
                        write_str(&mut o, &e.reference.name);
                    }
                    o.push_str("},\"message\":");
                    write_str(&mut o, &e.message);
                    o.push('}');
                }
                o.push(']');
            }
            o.push('}');
        }
        Blob::Other(m) => o.push_str(m.blob.get()),
    }
    o
}

fn props(o: &mut String, ps: &[Property]) {
    if ps.is_empty() {
        return;
    }
    o.push_str(",\"properties\":[");
    for (i, p) in ps.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        o.push_str("{\"type\":");
        write_str(o, &p.type_);
        o.push_str(",\"value\":");
        o.push_str(p.value.get());
        o.push('}');
    }
    o.push(']');
}

/// The canonical JSON of a blob: as loaded when kept, otherwise from its typed fields.
pub fn canonical_blob(b: &Blob) -> String {
    match b.raw() {
        Some(r) => r.get().to_owned(),
        None => {
            let j = blob_json(b);
            canonicalize_json(&j).unwrap_or(j)
        }
    }
}

/// Blobs are turned into text side by side, in runs of about this many bytes of compact JSON,
/// and written in order: enough to keep every core busy, little enough that the text waiting to
/// be written stays small (a run of 64 large bundles held 6 MB on the community catalog).
const WRITE_CHUNK_BYTES: usize = 512 << 10;

/// About how long a blob's compact JSON is, without writing it: its large parts (property
/// values, descriptions, icons, entries) measured, the rest guessed. Sizes output buffers and
/// write runs.
fn approx_len(b: &Blob) -> usize {
    let props = |ps: &[Property]| ps.iter().map(|p| p.value.get().len() + 48).sum::<usize>();
    128 + match b {
        Blob::Package(p) => {
            p.description.len()
                + p.icon.as_ref().map_or(0, |i| i.base64data.len())
                + props(&p.properties)
        }
        Blob::Channel(c) => c.entries().len() * 96 + props(&c.properties),
        Blob::Bundle(x) => x.image.len() + props(&x.properties) + x.related_images.len() * 160,
        Blob::Deprecations(d) => d.entries.iter().map(|e| e.message.len() + 96).sum(),
        Blob::Other(m) => m.blob.get().len(),
    }
}

/// Writes each blob of `cat`, in writer order, as `text` makes it (given a buffer sized for the
/// blob's text).
fn write_each(
    cat: &Catalog,
    w: &mut dyn Write,
    text: impl Fn(&Blob, String) -> io::Result<String> + Sync,
) -> io::Result<()> {
    use rayon::prelude::*;
    let sized: Vec<(&Blob, usize)> = ordered(cat)
        .into_iter()
        .map(|b| (b, approx_len(b)))
        .collect();
    let mut rest = sized.as_slice();
    while !rest.is_empty() {
        let (mut n, mut bytes) = (0, 0);
        while n < rest.len() && (n == 0 || bytes < WRITE_CHUNK_BYTES) {
            bytes += rest[n].1;
            n += 1;
        }
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        let texts: Vec<io::Result<String>> = chunk
            .par_iter()
            .map(|&(b, len)| text(b, String::with_capacity(len * 5 / 4)))
            .collect();
        for t in texts {
            w.write_all(t?.as_bytes())?;
        }
    }
    Ok(())
}

/// `opm render -o json`: one 4-space-indented document per blob, each followed by a newline.
pub fn write_json(cat: &Catalog, w: &mut dyn Write) -> io::Result<()> {
    write_each(cat, w, |b, mut out| {
        indent_json(&blob_json(b), "    ", &mut out);
        out.push('\n');
        Ok(out)
    })
}

/// `opm render -o yaml`: each blob, keys sorted, as YAML prefixed by `---`.
pub fn write_yaml(cat: &Catalog, w: &mut dyn Write) -> io::Result<()> {
    write_each(cat, w, |b, mut out| {
        let v: serde_json::Value = serde_json::from_str(&blob_json(b)).map_err(io::Error::other)?;
        out.push_str("---\n");
        crate::yaml::to_yaml_into(&v, &mut out);
        Ok(out)
    })
}

/// catalogd's `catalog.jsonl`.
pub fn write_jsonl(cat: &Catalog, w: &mut dyn Write) -> io::Result<()> {
    let mut buf = Vec::with_capacity(1 << 16);
    for b in &cat.blobs {
        match b.raw() {
            Some(r) => buf.extend_from_slice(r.get().as_bytes()),
            None => buf.extend_from_slice(canonical_blob(b).as_bytes()),
        }
        buf.push(b'\n');
        if buf.len() > 1 << 20 {
            w.write_all(&buf)?;
            buf.clear();
        }
    }
    w.write_all(&buf)
}

/// Go's `json.Indent` with an empty prefix: compact input re-indented; empty `[]`/`{}` stay compact.
pub fn indent_json(src: &str, indent: &str, out: &mut String) {
    let b = src.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    let mut start = 0;
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(indent);
        }
    };
    while i < b.len() {
        match b[i] {
            b'"' => {
                // To the closing quote, past escaped characters; long strings (base64 of
                // bundle objects) are most of a bundle's text.
                i += 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', b.get(i..).unwrap_or_default()) {
                        Some(at) if b[i + at] == b'\\' => i += at + 2,
                        Some(at) => {
                            i += at + 1;
                            break;
                        }
                        None => {
                            i = b.len();
                            break;
                        }
                    }
                }
            }
            c @ (b'{' | b'[') => {
                out.push_str(&src[start..=i]);
                let close = if c == b'{' { b'}' } else { b']' };
                if i + 1 < b.len() && b[i + 1] == close {
                    out.push(close as char);
                    i += 2;
                } else {
                    depth += 1;
                    newline(out, depth);
                    i += 1;
                }
                start = i;
            }
            b'}' | b']' => {
                out.push_str(&src[start..i]);
                depth = depth.saturating_sub(1);
                newline(out, depth);
                out.push(b[i] as char);
                i += 1;
                start = i;
            }
            b',' => {
                out.push_str(&src[start..=i]);
                newline(out, depth);
                i += 1;
                start = i;
            }
            b':' => {
                out.push_str(&src[start..=i]);
                out.push(' ');
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&src[start.min(src.len())..]);
}

/// `opm render` post-processing of each reference: `olm.bundle.object` and `olm.csv.metadata`
/// properties move to the end (stable), related images are sorted by image. Touched blobs lose their kept JSON.
pub fn render_postprocess(cat: &mut Catalog) {
    use crate::property::{TYPE_BUNDLE_OBJECT, TYPE_CSV_METADATA};
    for b in cat.bundles_mut() {
        let heavy = |p: &Property| p.type_ == TYPE_BUNDLE_OBJECT || p.type_ == TYPE_CSV_METADATA;
        let mut props = b.properties.clone();
        props.sort_by_key(heavy);
        let mut ri = b.related_images.clone();
        ri.sort_by(|a, c| a.image.cmp(&c.image));
        if props != b.properties || ri != b.related_images {
            b.properties = props;
            b.related_images = ri;
        }
    }
}

/// A raw JSON value from a string (for building blobs in memory).
pub fn raw(s: &str) -> Option<Box<RawValue>> {
    RawValue::from_string(s.to_owned()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_indent() {
        let mut s = String::new();
        indent_json(r#"{"a":[],"b":{},"c":[1,{"d":"x,:{"}]}"#, "    ", &mut s);
        assert_eq!(
            s,
            "{\n    \"a\": [],\n    \"b\": {},\n    \"c\": [\n        1,\n        {\n            \"d\": \"x,:{\"\n        }\n    ]\n}"
        );
    }
}
