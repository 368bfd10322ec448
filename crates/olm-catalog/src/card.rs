//! What people see of a package before installing it — display name, provider, keywords,
//! categories, capability level, summary, description, links and maintainers — read from a
//! bundle (the head of the default channel, normally): its `olm.csv.metadata` property, else the
//! ClusterServiceVersion among its `olm.bundle.object` properties, as the
//! `bundle-object-to-csv-metadata` migration reads it. Unmigrated catalogs (the certified and
//! community ones among them) carry only the latter, so a reader of the former alone shows
//! empty columns. The catalog browser and `olm search` both read packages through this one
//! piece, and `olm search` ranks packages with [`Card::score`].

use serde_json::Value;

use crate::model::Bundle;

/// A package as people find it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Card {
    /// `displayName`.
    pub display_name: String,
    /// `provider.name`.
    pub provider: String,
    /// `keywords`.
    pub keywords: Vec<String>,
    /// The `categories` annotation, split at commas.
    pub categories: Vec<String>,
    /// The `capabilities` annotation (capability level).
    pub capabilities: String,
    /// The `description` annotation: a one-line summary.
    pub summary: String,
    /// `description`: the long description, Markdown.
    pub description: String,
    /// `links`: name and URL.
    pub links: Vec<(String, String)>,
    /// `maintainers`: name and e-mail.
    pub maintainers: Vec<(String, String)>,
}

impl Card {
    /// The card of `bundle`; empty when it carries neither metadata nor a CSV (or the CSV does
    /// not decode).
    pub fn of(bundle: &Bundle) -> Card {
        bundle
            .csv_metadata_or_object()
            .map(|m| Card::from_metadata(&m))
            .unwrap_or_default()
    }

    /// The card of an `olm.csv.metadata` value.
    pub fn from_metadata(m: &Value) -> Card {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        let pairs = |v: &Value, a: &str, b: &str| {
            v.as_array()
                .into_iter()
                .flatten()
                .map(|l| (text(&l[a]), text(&l[b])))
                .collect()
        };
        let annotations = &m["annotations"];
        Card {
            display_name: text(&m["displayName"]),
            provider: text(&m["provider"]["name"]),
            keywords: m["keywords"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|k| k.as_str().map(str::to_owned))
                .collect(),
            categories: annotations["categories"]
                .as_str()
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
                .collect(),
            capabilities: text(&annotations["capabilities"]),
            summary: text(&annotations["description"]),
            description: text(&m["description"]),
            links: pairs(&m["links"], "name", "url"),
            maintainers: pairs(&m["maintainers"], "name", "email"),
        }
    }

    /// The fields a word search looks in, with the package name, lowercased and joined by
    /// newlines (so no word spans two fields).
    pub fn haystack(&self, package: &str) -> String {
        [
            package,
            &self.display_name,
            &self.provider,
            &self.keywords.join(" "),
            &self.categories.join(" "),
            &self.capabilities,
            &self.summary,
        ]
        .join("\n")
        .to_lowercase()
    }

    /// How well package `package` with this card matches `words` (lowercase): `None` unless
    /// every word is found in the name, display name, provider, keywords, categories,
    /// capability, summary or description; otherwise higher for better matches. The exact
    /// name ranks above everything, then words in the name, the display name, keywords,
    /// provider and categories, and last the summary and description, so that `crunchy` lists
    /// "Crunchy Postgres for Kubernetes" before a package that mentions Crunchy in passing.
    pub fn score(&self, package: &str, words: &[String]) -> Option<u32> {
        if words.is_empty() {
            return Some(0);
        }
        let name = package.to_lowercase();
        let display = self.display_name.to_lowercase();
        let provider = self.provider.to_lowercase();
        let keywords: Vec<String> = self.keywords.iter().map(|k| k.to_lowercase()).collect();
        let categories = self.categories.join(" ").to_lowercase();
        let rest = format!(
            "{}\n{}\n{}",
            self.capabilities, self.summary, self.description
        )
        .to_lowercase();
        let mut score = 0u32;
        if words.join(" ") == name || words.join("-") == name {
            score += 10_000;
        }
        for w in words {
            let w = w.as_str();
            let mut best = 0u32;
            if name == w {
                best = best.max(1_000);
            } else if name.starts_with(w) {
                best = best.max(600);
            } else if name.contains(w) {
                best = best.max(400);
            }
            if display
                .split(|c: char| !c.is_alphanumeric())
                .any(|t| t == w)
            {
                best = best.max(350);
            } else if display.contains(w) {
                best = best.max(250);
            }
            if keywords.iter().any(|k| k == w) {
                best = best.max(200);
            } else if keywords.iter().any(|k| k.contains(w)) {
                best = best.max(120);
            }
            if provider.contains(w) {
                best = best.max(100);
            }
            if categories.contains(w) {
                best = best.max(80);
            }
            if rest.contains(w) {
                best = best.max(10);
            }
            if best == 0 {
                return None;
            }
            score += best;
        }
        Some(score)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crunchy() -> Card {
        Card::from_metadata(&json!({
            "displayName": "Crunchy Postgres for Kubernetes",
            "provider": {"name": "Crunchy Data"},
            "keywords": ["postgres", "postgresql", "database"],
            "annotations": {"categories": "Database", "capabilities": "Auto Pilot",
                "description": "Production Postgres Made Easy"},
            "description": "Crunchy PostgreSQL for Kubernetes …",
            "links": [{"name": "Docs", "url": "https://access.crunchydata.com"}],
            "maintainers": [{"name": "Crunchy Data", "email": "info@crunchydata.com"}],
        }))
    }

    #[test]
    fn metadata_is_read_field_by_field() {
        let c = crunchy();
        assert_eq!(c.display_name, "Crunchy Postgres for Kubernetes");
        assert_eq!(c.provider, "Crunchy Data");
        assert_eq!(c.categories, vec!["Database"]);
        assert_eq!(c.capabilities, "Auto Pilot");
        assert_eq!(c.summary, "Production Postgres Made Easy");
        assert_eq!(
            c.links,
            vec![("Docs".into(), "https://access.crunchydata.com".into())]
        );
        assert!(
            c.haystack("crunchy-postgres-operator")
                .contains("crunchy data")
        );
    }

    /// A bundle of an unmigrated catalog carries its CSV as an `olm.bundle.object`; the card
    /// is read from it.
    #[test]
    fn a_bundle_without_csv_metadata_is_read_from_its_csv() {
        use base64::Engine;
        let csv = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "etcd.v1", "annotations": {"description": "etcd for you"}},
            "spec": {"displayName": "etcd", "provider": {"name": "CoreOS"}, "keywords": ["kv"]}});
        let data = base64::engine::general_purpose::STANDARD.encode(csv.to_string());
        let text =
            json!({"schema": "olm.bundle", "name": "etcd.v1", "package": "etcd", "image": "x",
            "properties": [{"type": "olm.bundle.object", "value": {"data": data}}]})
            .to_string();
        let catalog = crate::load::load_jsonl(text.as_bytes(), "t").expect("loads");
        let bundle = catalog.bundles().next().expect("one bundle");
        let card = Card::of(bundle);
        assert_eq!(card.display_name, "etcd");
        assert_eq!(card.provider, "CoreOS");
        assert_eq!(card.summary, "etcd for you");
        assert_eq!(card.keywords, vec!["kv"]);
    }

    #[test]
    fn every_word_must_match_and_better_fields_rank_higher() {
        let words = |s: &str| -> Vec<String> { s.split_whitespace().map(str::to_owned).collect() };
        let c = crunchy();
        let by_display = c
            .score("postgresoperator", &words("crunchy"))
            .expect("matches");
        let passing = Card {
            description: "works with crunchy too".into(),
            ..Card::default()
        };
        let by_description = passing.score("other", &words("crunchy")).expect("matches");
        assert!(by_display > by_description);
        assert_eq!(c.score("postgresoperator", &words("crunchy mysql")), None);
        let exact = Card::default()
            .score("crunchy", &words("crunchy"))
            .expect("matches");
        assert!(exact > by_display, "the exact name first");
        assert_eq!(Card::default().score("x", &[]), Some(0));
    }
}
