//! Go's `strconv` readers that upstream's flags use.

/// Go's `strconv.ParseBool`: `1 t T TRUE true True` and `0 f F FALSE false False`, nothing else.
/// The error is the value refused, for the caller to word as its Go counterpart does.
pub fn parse_bool(s: &str) -> Result<bool, &str> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        other => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Go's `strconv` atob tests (`atob_test.go`).
    #[test]
    fn gos_vectors() {
        let table = [
            ("", None),
            ("asdf", None),
            ("0", Some(false)),
            ("f", Some(false)),
            ("F", Some(false)),
            ("FALSE", Some(false)),
            ("false", Some(false)),
            ("False", Some(false)),
            ("1", Some(true)),
            ("t", Some(true)),
            ("T", Some(true)),
            ("TRUE", Some(true)),
            ("true", Some(true)),
            ("True", Some(true)),
            ("tRuE", None),
            ("yes", None),
        ];
        for (s, want) in table {
            assert_eq!(parse_bool(s).ok(), want, "{s:?}");
        }
    }
}
