//! The small part of blang/semver v4 that validation needs: strict version parsing and range syntax
//! checking, with blang's error texts. The full version/range library (`olm-version`) replaces this.

use std::fmt;

/// A strictly parsed semantic version (no `v` prefix, no leading zeroes).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: Vec<String>,
    pub build: Vec<String>,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre.join("."))?;
        }
        if !self.build.is_empty() {
            write!(f, "+{}", self.build.join("."))?;
        }
        Ok(())
    }
}

fn only(s: &str, f: impl Fn(u8) -> bool) -> bool {
    s.bytes().all(f)
}
fn is_num(b: u8) -> bool {
    b.is_ascii_digit()
}
fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

fn parse_u64(s: &str) -> Result<u64, String> {
    s.parse::<u64>().map_err(|_| {
        format!(
            "strconv.ParseUint: parsing {}: value out of range",
            crate::goq(s)
        )
    })
}

/// blang `NewPRVersion` checks for one prerelease identifier.
pub fn check_prerelease(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("Prerelease is empty".to_owned());
    }
    if only(s, is_num) {
        if s.len() > 1 && s.starts_with('0') {
            return Err(format!(
                "Numeric PreRelease version must not contain leading zeroes {}",
                crate::goq(s)
            ));
        }
        parse_u64(s)?;
    } else if !only(s, is_alnum) {
        return Err(format!(
            "Invalid character(s) found in prerelease {}",
            crate::goq(s)
        ));
    }
    Ok(())
}

/// blang `semver.Parse`.
pub fn parse(s: &str) -> Result<Version, String> {
    if s.is_empty() {
        return Err("Version string empty".to_owned());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    if parts.len() != 3 {
        return Err("No Major.Minor.Patch elements found".to_owned());
    }
    let mut nums = [0u64; 2];
    for (i, what) in ["major", "minor"].iter().enumerate() {
        let p = parts[i];
        if !only(p, is_num) {
            return Err(format!(
                "Invalid character(s) found in {what} number {}",
                crate::goq(p)
            ));
        }
        if p.len() > 1 && p.starts_with('0') {
            let cap = if i == 0 { "Major" } else { "Minor" };
            return Err(format!(
                "{cap} number must not contain leading zeroes {}",
                crate::goq(p)
            ));
        }
        nums[i] = parse_u64(p)?;
    }
    let mut patch = parts[2];
    let mut build = Vec::new();
    let mut pre = Vec::new();
    if let Some(i) = patch.find('+') {
        build = patch[i + 1..].split('.').map(str::to_owned).collect();
        patch = &patch[..i];
    }
    if let Some(i) = patch.find('-') {
        pre = patch[i + 1..].split('.').map(str::to_owned).collect();
        patch = &patch[..i];
    }
    if !only(patch, is_num) {
        return Err(format!(
            "Invalid character(s) found in patch number {}",
            crate::goq(patch)
        ));
    }
    if patch.len() > 1 && patch.starts_with('0') {
        return Err(format!(
            "Patch number must not contain leading zeroes {}",
            crate::goq(patch)
        ));
    }
    let patch = parse_u64(patch)?;
    for p in &pre {
        check_prerelease(p)?;
    }
    for b in &build {
        if b.is_empty() {
            return Err("Build meta data is empty".to_owned());
        }
        if !only(b, is_alnum) {
            return Err(format!(
                "Invalid character(s) found in build meta data {}",
                crate::goq(b)
            ));
        }
    }
    Ok(Version {
        major: nums[0],
        minor: nums[1],
        patch,
        pre,
        build,
    })
}

fn split_and_trim(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut last = 0usize;
    let mut last_char = 0u8;
    for i in 0..b.len() {
        if b[i] == b' ' && !matches!(last_char, b'>' | b'<' | b'=') {
            if i > 0 && last < i - 1 {
                out.push(s[last..i].to_owned());
            }
            last = i + 1;
        } else if b[i] != b' ' {
            last_char = b[i];
        }
    }
    if !b.is_empty() && last < b.len() - 1 {
        out.push(s[last..].to_owned());
    }
    out.into_iter().map(|v| v.replace(' ', "")).collect()
}

fn split_comparator_version(s: &str) -> Result<(&str, &str), String> {
    match s.find(|c: char| c.is_ascii_digit()) {
        Some(i) => Ok((s[..i].trim(), &s[i..])),
        None => Err(format!(
            "Could not get version from string: {}",
            crate::goq(s)
        )),
    }
}

/// Checks a blang/semver range (`>=1.0.0 <2.0.0 || 3.x`), returning blang's error text.
pub fn valid_skip_range(s: &str) -> Result<(), String> {
    let parts = split_and_trim(s);
    let mut or_parts: Vec<Vec<String>> = Vec::new();
    let mut last = 0;
    for (i, p) in parts.iter().enumerate() {
        if p == "||" {
            if i == 0 {
                return Err("First element in range is '||'".to_owned());
            }
            or_parts.push(parts[last..i].to_vec());
            last = i + 1;
        }
    }
    if last == parts.len() {
        return Err("Last element in range is '||'".to_owned());
    }
    or_parts.push(parts[last..].to_vec());
    for and in or_parts {
        for ap in and {
            // Wildcards (`1.2.x`) expand to plain versions with `.0`; only their syntax matters here.
            let expanded;
            let ap_ref: &str = if ap.contains('x') {
                let (op, v) = split_comparator_version(&ap)?;
                let flat = v.replace(".x", ".0");
                let op = match op {
                    ">" | ">=" | "" | "=" | "==" | "!=" | "!" => ">=",
                    _ => "<",
                };
                expanded = format!("{op}{flat}");
                &expanded
            } else {
                &ap
            };
            let (op, v) = split_comparator_version(ap_ref)?;
            if !matches!(op, "" | "=" | "==" | ">" | ">=" | "<" | "<=" | "!" | "!=") {
                return Err(format!(
                    "Could not parse Range {}: Could not parse comparator {} in {}",
                    crate::goq(ap_ref),
                    crate::goq(op),
                    crate::goq(&format!("{op}{v}"))
                ));
            }
            if let Err(e) = parse(v) {
                return Err(format!(
                    "Could not parse Range {}: Could not parse version {} in {}: {e}",
                    crate::goq(ap_ref),
                    crate::goq(v),
                    crate::goq(&format!("{op}{v}"))
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blang_parse_messages() {
        assert_eq!(parse("").unwrap_err(), "Version string empty");
        assert_eq!(
            parse("1.0.0.1").unwrap_err(),
            r#"Invalid character(s) found in patch number "0.1""#
        );
        assert_eq!(
            parse("v1.0.0").unwrap_err(),
            r#"Invalid character(s) found in major number "v1""#
        );
        assert_eq!(
            parse("1.0").unwrap_err(),
            "No Major.Minor.Patch elements found"
        );
        assert_eq!(
            parse("1.01.0").unwrap_err(),
            r#"Minor number must not contain leading zeroes "01""#
        );
        assert_eq!(
            parse("1.0.0-rc.1+build.5").unwrap().to_string(),
            "1.0.0-rc.1+build.5"
        );
    }

    #[test]
    fn blang_ranges() {
        for ok in [
            ">=1.0.0 <2.0.0",
            "<1.10.2",
            ">=0.4.0 <0.13.0",
            ">1.0.0 || <0.5.0",
            "1.2.x",
            ">= 1.0.0",
            ">=2.4.18 <2.5.14",
            ">=0.0.0 <0.10.0-alpha.9",
        ] {
            assert!(valid_skip_range(ok).is_ok(), "{ok}");
        }
        assert_eq!(
            valid_skip_range(">v0.1.0").unwrap_err(),
            r#"Could not parse Range ">v0.1.0": Could not parse comparator ">v" in ">v0.1.0""#
        );
        assert_eq!(
            valid_skip_range("|| 1.0.0").unwrap_err(),
            "First element in range is '||'"
        );
        assert_eq!(
            valid_skip_range("1.0.0 ||").unwrap_err(),
            "Last element in range is '||'"
        );
        assert_eq!(
            valid_skip_range("abc").unwrap_err(),
            r#"Could not get version from string: "abc""#
        );
        assert_eq!(
            valid_skip_range("<1.0").unwrap_err(),
            r#"Could not parse Range "<1.0": Could not parse version "1.0" in "<1.0": No Major.Minor.Patch elements found"#
        );
    }
}
