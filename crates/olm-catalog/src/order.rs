//! Orders for people: channel and package names compared as people count (`v25.3` before
//! `v25.10`), which the catalog browser and `olm catalog list` both use.

/// Compares names as people count: runs of digits by their value, the rest as text.
pub fn natural(a: &str, b: &str) -> std::cmp::Ordering {
    fn chunks(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    let (x, y) = (chunks(a), chunks(b));
    for ((dx, cx), (dy, cy)) in x.iter().zip(y.iter()) {
        let order = if *dx && *dy {
            let (tx, ty) = (cx.trim_start_matches('0'), cy.trim_start_matches('0'));
            tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty))
        } else {
            cx.cmp(cy)
        };
        if order.is_ne() {
            return order;
        }
    }
    x.len().cmp(&y.len()).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::natural;

    #[test]
    fn numbers_count_by_value() {
        let mut names = vec![
            "stable-3.10",
            "stable-3.6",
            "alpha",
            "stable-3.9",
            "stable",
            "v10",
            "v9",
        ];
        names.sort_by(|a, b| natural(a, b));
        assert_eq!(
            names,
            [
                "alpha",
                "stable",
                "stable-3.6",
                "stable-3.9",
                "stable-3.10",
                "v9",
                "v10"
            ]
        );
    }
}
