//! Helpers shared by the fuzz targets: splitting one input into several named parts, and the
//! catalog round trip every catalog target checks.

use olm_catalog::write::{self, Format};

/// The line that starts a named part of a multi-file input: `~~~ NAME` on a line of its own.
pub const PART_MARK: &[u8] = b"~~~ ";

/// Splits `data` into `(name, contents)` parts at lines starting with [`PART_MARK`]; the text
/// before the first such line is dropped. Each part's contents end before the newline that
/// precedes the next mark.
pub fn split_parts(data: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut starts = Vec::new();
    let mut at = 0;
    while at <= data.len() {
        let line = &data[at..];
        if line.starts_with(PART_MARK) {
            starts.push(at);
        }
        match line.iter().position(|&b| b == b'\n') {
            Some(i) => at += i + 1,
            None => break,
        }
    }
    let mut parts = Vec::new();
    for (i, &s) in starts.iter().enumerate() {
        let end = starts
            .get(i + 1)
            .map_or(data.len(), |&n| n.saturating_sub(1));
        let block = &data[s + PART_MARK.len()..end.max(s + PART_MARK.len())];
        let (name, body) = match block.iter().position(|&b| b == b'\n') {
            Some(n) => (&block[..n], &block[n + 1..]),
            None => (block, &[][..]),
        };
        parts.push((String::from_utf8_lossy(name).into_owned(), body.to_vec()));
    }
    parts
}

/// What every loaded catalog must satisfy: validating does not panic, and every format we write
/// reads back to the same catalog (compared as the JSON writer prints it, which is canonical).
/// The one thing YAML loses is the sign of a zero (`-0` is the integer 0 there, as opm writes it).
pub fn check_catalog(cat: &olm_catalog::Catalog) {
    let _ = olm_catalog::validate(cat);
    let json = write::to_string(cat, Format::Json);
    let back = olm_catalog::load_bytes(json.as_bytes(), "written")
        .unwrap_or_else(|e| panic!("Json output does not load: {e}\n{json}"));
    assert_eq!(
        write::to_string(&back, Format::Json),
        json,
        "Json output loads as another catalog"
    );
    let text = write::to_string(cat, Format::Yaml);
    let back = olm_catalog::load_bytes(text.as_bytes(), "written")
        .unwrap_or_else(|e| panic!("Yaml output does not load: {e}\n{text}"));
    assert_eq!(
        unsigned_zeros(&write::to_string(&back, Format::Json)),
        unsigned_zeros(&json),
        "Yaml output loads as another catalog"
    );
    let text = write::to_string(cat, Format::Jsonl);
    let back = olm_catalog::load_jsonl(text.as_bytes(), "written")
        .unwrap_or_else(|e| panic!("JSONL output does not load: {e}\n{text}"));
    assert_eq!(
        write::to_string(&back, Format::Json),
        json,
        "JSONL output loads as another catalog"
    );
}

/// The documents of a JSON stream with every negative zero made zero.
fn unsigned_zeros(stream: &str) -> Vec<serde_json::Value> {
    fn fix(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Number(n) if n.as_f64() == Some(0.0) => *v = 0.into(),
            serde_json::Value::Array(items) => items.iter_mut().for_each(fix),
            serde_json::Value::Object(m) => m.values_mut().for_each(fix),
            _ => {}
        }
    }
    serde_json::Deserializer::from_str(stream)
        .into_iter::<serde_json::Value>()
        .map(|v| {
            let mut v = v.expect("the JSON writer writes JSON");
            fix(&mut v);
            v
        })
        .collect()
}
