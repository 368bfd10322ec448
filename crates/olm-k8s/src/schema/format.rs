//! The string formats CRD schemas may name, checked as kube-openapi's `strfmt.Default` registry
//! checks them. apiextensions keeps only the formats of its `supportedVersionedFormats` list (at
//! the 1.33 compatibility version a 1.34 apiserver uses: no `k8s-short-name`) and blanks the rest,
//! so `int32`, `int64`, `float`, `double` and unknown names are never checked.

/// The registry name of `format` (dashes removed, as go-openapi normalizes names) when
/// apiextensions keeps it, `None` when it strips it.
pub(super) fn supported(format: &str) -> Option<&'static str> {
    const NAMES: &str = "bsonobjectid uri email hostname ipv4 ipv6 cidr mac uuid uuid3 uuid4 uuid5 \
        isbn isbn10 isbn13 creditcard ssn hexcolor rgbcolor byte password date duration datetime";
    let normalized = || format.bytes().filter(|c| *c != b'-');
    NAMES.split(' ').find(|n| n.bytes().eq(normalized()))
}

/// Whether `s` is valid for the registry format `name` (from [`supported`]).
pub(super) fn check(name: &str, s: &str) -> bool {
    let b = s.as_bytes();
    match name {
        "bsonobjectid" => b.len() == 24 && b.iter().all(u8::is_ascii_hexdigit),
        "uri" => is_request_uri(s),
        "email" => is_email(s),
        "hostname" => is_hostname(s),
        "ipv4" => parse_ip(s, false).is_some() && s.contains('.'),
        "ipv6" => parse_ip(s, true).is_some() && s.contains(':'),
        "cidr" => is_cidr(s),
        "mac" => is_mac(b),
        "uuid" => is_uuid(b, None),
        "uuid3" => is_uuid(b, Some(b'3')),
        "uuid4" => is_uuid(b, Some(b'4')),
        "uuid5" => is_uuid(b, Some(b'5')),
        "isbn" => is_isbn10(s) || is_isbn13(s),
        "isbn10" => is_isbn10(s),
        "isbn13" => is_isbn13(s),
        "creditcard" => is_credit_card(s),
        "ssn" => {
            b.len() == 11
                && digits(&b[..3])
                && digits(&b[4..6])
                && digits(&b[7..])
                && [b[3], b[6]].iter().all(|c| matches!(c, b'-' | b' '))
        }
        "hexcolor" => {
            let h = b.strip_prefix(b"#").unwrap_or(b);
            matches!(h.len(), 3 | 6) && h.iter().all(u8::is_ascii_hexdigit)
        }
        "rgbcolor" => is_rgb(s),
        "byte" => is_base64(b),
        "password" => true,
        "date" => is_date(b),
        "duration" => is_duration(s),
        "datetime" => is_date_time(s),
        _ => true,
    }
}

fn digits(b: &[u8]) -> bool {
    b.iter().all(u8::is_ascii_digit)
}

/// Go's `\s`: ASCII whitespace without `\v`.
fn go_space(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' ')
}

/// `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?V[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$` and kin.
fn is_uuid(b: &[u8], version: Option<u8>) -> bool {
    let mut i = 0;
    for (g, len) in [8, 4, 4, 4, 12].into_iter().enumerate() {
        if g > 0 && b.get(i) == Some(&b'-') {
            i += 1;
        }
        let Some(group) = b.get(i..i + len) else {
            return false;
        };
        if !group.iter().all(u8::is_ascii_hexdigit) {
            return false;
        }
        match (g, version) {
            (2, Some(v)) if group[0] != v => return false,
            (3, Some(b'4' | b'5')) if !b"89abAB".contains(&group[0]) => return false,
            _ => {}
        }
        i += len;
    }
    i == b.len()
}

/// `time.Parse("2006-01-02", s)`.
fn is_date(b: &[u8]) -> bool {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| {
        let d = &b[r];
        digits(d).then(|| d.iter().fold(0u32, |n, c| n * 10 + u32::from(c - b'0')))
    };
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// strfmt's `IsDateTime`: a date, a `t`, and `HH:MM:SS(.frac)?(z|±HH:MM)` with loose ranges.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    if !is_date(date.as_bytes()) {
        return false;
    }
    let t = time.as_bytes();
    if t.len() < 9
        || t[2] != b':'
        || t[5] != b':'
        || ![&t[..2], &t[3..5], &t[6..8]].iter().all(|d| digits(d))
    {
        return false;
    }
    if &t[..2] > b"23".as_slice() || &t[3..5] > b"59".as_slice() || &t[6..8] > b"59".as_slice() {
        return false;
    }
    let rest = &time[8..];
    // `(.[0-9]+)?`: any one character except a newline, then digits.
    if let Some(c) = rest.chars().next()
        && c != '\n'
    {
        let after = &rest[c.len_utf8()..];
        let n = after.bytes().take_while(u8::is_ascii_digit).count();
        if n > 0 && zone_ok(&after[n..]) {
            return true;
        }
    }
    zone_ok(rest)
}

fn zone_ok(z: &str) -> bool {
    let b = z.as_bytes();
    z == "z"
        || (b.len() == 6
            && matches!(b[0], b'+' | b'-')
            && b[3] == b':'
            && digits(&b[1..3])
            && digits(&b[4..]))
}

/// strfmt's `ParseDuration`: Go's `time.ParseDuration`, else any `<digits> <unit>` run with a
/// unit it knows by name or prefix.
fn is_duration(s: &str) -> bool {
    if olm_goenc::duration::parse_duration(s).is_ok() {
        return true;
    }
    const UNITS: [&[&str]; 8] = [
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let mut ok = false;
    let mut rest = s;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        let run = &rest[start..];
        let n = run.bytes().take_while(u8::is_ascii_digit).count();
        let after = run[n..].trim_start_matches(go_space);
        let unit_len: usize = after
            .chars()
            .take_while(|c| c.is_ascii_alphabetic() || *c == 'µ')
            .map(char::len_utf8)
            .sum();
        if unit_len == 0 {
            rest = &run[n..];
            continue;
        }
        if run[..n].parse::<i64>().is_err() {
            return false;
        }
        let unit = after[..unit_len].to_ascii_lowercase();
        ok |= UNITS.iter().any(|variants| {
            variants.iter().enumerate().any(|(i, v)| {
                (i + 1 == variants.len() && unit.starts_with(v)) || v.eq_ignore_ascii_case(&unit)
            })
        });
        rest = &after[unit_len..];
    }
    ok
}

/// govalidator's base64 pattern: whole quanta of the standard alphabet, padding only at the end.
fn is_base64(b: &[u8]) -> bool {
    let alpha = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/');
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return false;
    }
    let (body, last) = b.split_at(b.len() - 4);
    body.iter().all(alpha)
        && match last {
            [a, b, b'=', b'='] => alpha(a) && alpha(b),
            [a, b, c, b'='] => alpha(a) && alpha(b) && alpha(c),
            q => q.iter().all(alpha),
        }
}

/// govalidator's `IsRGBcolor`: `rgb(r, g, b)`, each 0–255 without leading zeros.
fn is_rgb(s: &str) -> bool {
    let Some(inner) = s.strip_prefix("rgb(").and_then(|r| r.strip_suffix(')')) else {
        return false;
    };
    let parts: Vec<&str> = inner.split(',').collect();
    parts.len() == 3
        && parts.iter().all(|p| {
            let n = p.trim_matches(go_space);
            !n.is_empty()
                && digits(n.as_bytes())
                && (n == "0" || !n.starts_with('0'))
                && n.parse::<u16>().is_ok_and(|v| v <= 255)
        })
}

fn is_isbn10(s: &str) -> bool {
    let d: Vec<u8> = s
        .bytes()
        .filter(|c| !matches!(c, b'-' | b'\t' | b'\n' | b'\x0c' | b'\r' | b' '))
        .collect();
    if d.len() != 10 || !digits(&d[..9]) || !(d[9].is_ascii_digit() || d[9] == b'X') {
        return false;
    }
    let sum: u32 = (0..9)
        .map(|i| (i as u32 + 1) * u32::from(d[i] - b'0'))
        .sum::<u32>()
        + if d[9] == b'X' {
            100
        } else {
            10 * u32::from(d[9] - b'0')
        };
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let d: Vec<u8> = s
        .bytes()
        .filter(|c| !matches!(c, b'-' | b'\t' | b'\n' | b'\x0c' | b'\r' | b' '))
        .collect();
    if d.len() != 13 || !digits(&d) {
        return false;
    }
    let sum: u32 = (0..12)
        .map(|i| [1, 3][i % 2] * u32::from(d[i] - b'0'))
        .sum();
    u32::from(d[12] - b'0') == (10 - sum % 10) % 10
}

/// govalidator's `IsCreditCard`: the digits (everything else dropped) form a known issuer's
/// number and pass the Luhn check.
fn is_credit_card(s: &str) -> bool {
    let d: Vec<u8> = s.bytes().filter(u8::is_ascii_digit).collect();
    let p = |prefix: &[u8]| d.starts_with(prefix);
    let in_range = |i: usize, lo: u8, hi: u8| d.get(i).is_some_and(|c| (lo..=hi).contains(c));
    let issuer = match d.len() {
        13 => p(b"4"),
        14 => p(b"30") && in_range(2, b'0', b'5') || p(b"36") || p(b"38"),
        15 => p(b"34") || p(b"37") || p(b"2131") || p(b"1800"),
        16 => p(b"4") || p(b"5") && in_range(1, b'1', b'5') || p(b"6011") || p(b"65") || p(b"35"),
        _ => false,
    };
    let sum: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(i, c)| {
            let n = u32::from(c - b'0');
            match (i % 2 == 1, n * 2) {
                (false, _) => n,
                (true, x) if x >= 10 => x % 10 + 1,
                (true, x) => x,
            }
        })
        .sum();
    issuer && sum.is_multiple_of(10)
}

/// `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx…`, `xx-xx…`, `xxxx.xxxx…` or bare hex.
fn is_mac(b: &[u8]) -> bool {
    let hex2 = |x: &[u8]| x.len() == 2 && x.iter().all(u8::is_ascii_hexdigit);
    let n_ok = |n: usize| matches!(n, 6 | 8 | 20);
    if b.len() < 12 {
        return false;
    }
    if matches!(b[2], b':' | b'-') {
        (b.len() + 1).is_multiple_of(3)
            && n_ok((b.len() + 1) / 3)
            && b.chunks(3)
                .all(|c| hex2(&c[..2]) && c.get(2).is_none_or(|s| *s == b[2]))
    } else if b[4] == b'.' {
        (b.len() + 1).is_multiple_of(5)
            && n_ok(2 * (b.len() + 1) / 5)
            && b.chunks(5).all(|c| {
                hex2(&c[..2])
                    && c.len() >= 4
                    && hex2(&c[2..4])
                    && c.get(4).is_none_or(|s| *s == b'.')
            })
    } else {
        b.len().is_multiple_of(2) && n_ok(b.len() / 2) && b.iter().all(u8::is_ascii_hexdigit)
    }
}

/// An IP address as `net.ParseIP` (`strict`) or k8s.io/utils' `ParseIPSloppy` (leading zeros and
/// long hex groups allowed) reads it; `Some(true)` for IPv4.
fn parse_ip(s: &str, strict: bool) -> Option<bool> {
    match s.bytes().find(|c| matches!(c, b'.' | b':' | b'%'))? {
        b'.' => ipv4(s, strict).then_some(true),
        b':' => ipv6(s, strict).then_some(false),
        _ => None,
    }
}

fn ipv4(s: &str, strict: bool) -> bool {
    let fields: Vec<&str> = s.split('.').collect();
    fields.len() == 4
        && fields.iter().all(|f| {
            !f.is_empty()
                && digits(f.as_bytes())
                && (!strict || f.len() == 1 || !f.starts_with('0'))
                && (f.len() <= 3 || !strict && f.trim_start_matches('0').len() <= 3)
                && f.trim_start_matches('0').parse::<u32>().unwrap_or(0) <= 255
        })
}

fn ipv6(s: &str, strict: bool) -> bool {
    if strict && s.contains('%') {
        return false;
    }
    let mut s = s;
    let mut ellipsis = None;
    if let Some(r) = s.strip_prefix("::") {
        ellipsis = Some(0);
        s = r;
        if s.is_empty() {
            return true;
        }
    }
    let mut i = 0;
    while i < 16 {
        let n = s.bytes().take_while(u8::is_ascii_hexdigit).count();
        let digits_ok = if strict {
            n <= 4
        } else {
            s[..n].trim_start_matches('0').len() <= 4
        };
        // At most four significant hex digits: at most 0xFFFF.
        if n == 0 || !digits_ok {
            return false;
        }
        if s.as_bytes().get(n) == Some(&b'.') {
            if (ellipsis.is_none() && i != 12) || i + 4 > 16 || !ipv4(s, strict) {
                return false;
            }
            s = "";
            i += 4;
            break;
        }
        i += 2;
        s = &s[n..];
        if s.is_empty() {
            break;
        }
        if !s.starts_with(':') || s.len() == 1 {
            return false;
        }
        s = &s[1..];
        if let Some(r) = s.strip_prefix(':') {
            if ellipsis.is_some() {
                return false;
            }
            ellipsis = Some(i);
            s = r;
            if s.is_empty() {
                break;
            }
        }
    }
    s.is_empty() && (i == 16) != ellipsis.is_some()
}

/// k8s.io/utils' `ParseCIDRSloppy`.
fn is_cidr(s: &str) -> bool {
    let Some((addr, mask)) = s.split_once('/') else {
        return false;
    };
    let bits = if ipv4(addr, false) {
        32
    } else if ipv6(addr, false) {
        128
    } else {
        return false;
    };
    !mask.is_empty()
        && digits(mask.as_bytes())
        && mask.trim_start_matches('0').len() <= 3
        && mask.trim_start_matches('0').parse::<u32>().unwrap_or(0) <= bits
}

/// strfmt's `IsHostname`: its pattern (a single label with at most one dash after its first
/// character, or dot-terminated labels and a 2–63 letter top-level label), at most 255 bytes and
/// 63 bytes per label. Letters and symbols outside ASCII are approximated.
fn is_hostname(s: &str) -> bool {
    let a = |c: char| {
        c.is_ascii_alphanumeric()
            || "$+<=>^`|~".contains(c)
            || !c.is_ascii()
                && (c.is_alphabetic()
                    || !(c.is_alphanumeric() || c.is_whitespace() || c.is_control()))
    };
    let letter = |c: char| c.is_ascii_alphabetic() || !c.is_ascii() && c.is_alphabetic();
    let single = || {
        let mut cs = s.chars();
        cs.next().is_some_and(a) && {
            let rest = cs.as_str();
            let rest = rest.strip_prefix('-').unwrap_or(rest);
            rest.chars().count() <= 62 && rest.chars().all(a)
        }
    };
    let dotted = || {
        let labels: Vec<&str> = s.split('.').collect();
        let (tld, labels) = labels.split_last().unwrap_or((&"", &[]));
        let tld_len = tld.chars().count();
        !labels.is_empty()
            && (2..=63).contains(&tld_len)
            && tld.chars().all(letter)
            && labels.iter().all(|l| {
                let cs: Vec<char> = l.chars().collect();
                match cs.as_slice() {
                    [c] => a(*c),
                    [f, mid @ .., l] => {
                        a(*f) && a(*l) && mid.len() <= 61 && mid.iter().all(|c| *c == '-' || a(*c))
                    }
                    [] => false,
                }
            })
    };
    (single() || dotted()) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
}

/// Go's `url.ParseRequestURI` accepts it: an absolute URI or an absolute path.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.bytes().any(|c| c < b' ' || c == 0x7f) {
        return false;
    }
    if s == "*" {
        return true;
    }
    // getScheme: letters, then letters, digits, `+-.`, up to a colon.
    let mut scheme = "";
    let mut rest = s;
    for (i, c) in s.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return false,
            b':' => {
                (scheme, rest) = (&s[..i], &s[i + 1..]);
                break;
            }
            _ => break,
        }
    }
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, _)) = rest.split_once('?') {
        rest = r;
    }
    if !rest.starts_with('/') {
        return !scheme.is_empty();
    }
    if !scheme.is_empty()
        && let Some(authority) = rest.strip_prefix("//")
    {
        let (authority, path) = authority.split_at(authority.find('/').unwrap_or(authority.len()));
        let (user, host) = match authority.rfind('@') {
            Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
            None => (None, authority),
        };
        if !uri_host(host) {
            return false;
        }
        if let Some(u) = user
            && !(u
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c))
                && unescape_ok(u, Part::Path))
        {
            return false;
        }
        return unescape_ok(path, Part::Path);
    }
    unescape_ok(rest, Part::Path)
}

/// The part of a URL `net/url`'s `unescape` reads, which decides what it accepts.
#[derive(Clone, Copy, PartialEq)]
enum Part {
    Path,
    Host,
    Zone,
}

/// A byte a host may hold as it is (`shouldEscape(c, encodeHost)` is false).
fn host_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!$&'()*+,;=:[]<>\"-_.~".contains(&c)
}

/// `net/url`'s `unescape` succeeds: every `%` starts two hex digits; a host may escape only
/// non-ASCII bytes (or `%25`) and a zone only host bytes and spaces, and both hold only host bytes.
fn unescape_ok(s: &str, part: Part) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let Some(h) = b
                .get(i + 1..i + 3)
                .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            else {
                return false;
            };
            let v = u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap_or(0);
            let ok = match part {
                Part::Path => true,
                Part::Host => h[0] >= b'8' || h == b"25",
                Part::Zone => h == b"25" || v == b' ' || host_byte(v),
            };
            if !ok {
                return false;
            }
            i += 3;
        } else {
            if part != Part::Path && b[i] < 0x80 && !host_byte(b[i]) {
                return false;
            }
            i += 1;
        }
    }
    true
}

/// `net/url`'s `parseHost`: `[IPv6]:port`, or `host:port` with the port after the last colon.
fn uri_host(host: &str) -> bool {
    match host.rfind('[') {
        Some(0) => {
            let Some(close) = host.rfind(']') else {
                return false;
            };
            let port = &host[close + 1..];
            if !(port.is_empty() || port.starts_with(':') && digits(&port.as_bytes()[1..])) {
                return false;
            }
            let inner = &host[1..close];
            let (addr, zone) = match inner.find("%25") {
                Some(i) => (&inner[..i], Some(&inner[i + 3..])),
                None => (inner, None),
            };
            if !unescape_ok(addr, Part::Host) || addr.contains('%') {
                return false;
            }
            if let Some(z) = zone
                && (z.is_empty() || !unescape_ok(z, Part::Zone))
            {
                return false;
            }
            parse_ip(addr, true) == Some(false)
        }
        Some(_) => false,
        None => {
            if let Some(i) = host.rfind(':')
                && !digits(&host.as_bytes()[i + 1..])
            {
                return false;
            }
            unescape_ok(host, Part::Host)
        }
    }
}

/// strfmt's `IsEmail`: `net/mail.ParseAddress` accepts it as exactly one address. RFC 2047
/// encoded words are taken literally.
fn is_email(s: &str) -> bool {
    let mut p = Mail { s };
    p.address(true).is_some_and(|n| n == 1) && p.skip_cfws() && p.s.is_empty()
}

/// `net/mail`'s `addrParser`, keeping only whether parsing succeeds.
struct Mail<'s> {
    s: &'s str,
}

fn atext(c: char, dot: bool) -> bool {
    match c {
        '.' => dot,
        '(' | ')' | '<' | '>' | '[' | ']' | ':' | ';' | '@' | '\\' | ',' | '"' => false,
        c => vchar(c),
    }
}

fn vchar(c: char) -> bool {
    ('!'..='~').contains(&c) || !c.is_ascii()
}

impl Mail<'_> {
    fn skip_space(&mut self) {
        self.s = self.s.trim_start_matches([' ', '\t']);
    }

    fn eat(&mut self, c: char) -> bool {
        self.s.strip_prefix(c).map(|r| self.s = r).is_some()
    }

    /// How many addresses `parseAddress` returns, `None` on error.
    fn address(&mut self, group: bool) -> Option<usize> {
        self.skip_space();
        if self.s.is_empty() {
            return None;
        }
        let saved = self.s;
        if self.addr_spec() {
            self.skip_space();
            if self.eat('(') && !self.comment() {
                return None;
            }
            return Some(1);
        }
        self.s = saved;
        if !self.s.starts_with('<') && !self.phrase() {
            return None;
        }
        self.skip_space();
        if group && self.eat(':') {
            return self.group();
        }
        (self.eat('<') && self.addr_spec() && self.eat('>')).then_some(1)
    }

    fn group(&mut self) -> Option<usize> {
        self.skip_space();
        if self.eat(';') {
            return self.skip_cfws().then_some(0);
        }
        let mut n = 0;
        loop {
            self.skip_space();
            n += self.address(false)?;
            if !self.skip_cfws() {
                return None;
            }
            if self.eat(';') {
                return self.skip_cfws().then_some(n);
            }
            if !self.eat(',') {
                return None;
            }
        }
    }

    fn addr_spec(&mut self) -> bool {
        self.skip_space();
        let local = if self.s.starts_with('"') {
            self.quoted().is_some_and(|q| !q)
        } else {
            self.atom(false)
        };
        if !local || !self.eat('@') {
            return false;
        }
        self.skip_space();
        if self.s.starts_with('[') {
            self.s = &self.s[1..];
            let end = self
                .s
                .find(|c: char| c == ']' || !vchar(c) || c == '[' || c == '\\');
            let Some(end) = end.filter(|e| self.s.as_bytes()[*e] == b']') else {
                return false;
            };
            let literal = &self.s[..end];
            self.s = &self.s[end + 1..];
            return parse_ip(literal, true).is_some();
        }
        !self.s.is_empty() && self.atom(false)
    }

    /// A (dot-)atom; `permissive` allows leading, trailing and double dots.
    fn atom(&mut self, permissive: bool) -> bool {
        let n: usize = self
            .s
            .chars()
            .take_while(|c| atext(*c, true))
            .map(char::len_utf8)
            .sum();
        let atom = &self.s[..n];
        self.s = &self.s[n..];
        n > 0
            && (permissive
                || !(atom.starts_with('.') || atom.ends_with('.') || atom.contains("..")))
    }

    /// A quoted string; `Some(true)` when it is empty.
    fn quoted(&mut self) -> Option<bool> {
        let mut escaped = false;
        let mut empty = true;
        for (i, c) in self.s.char_indices().skip(1) {
            if escaped {
                if !(vchar(c) || c == ' ' || c == '\t') {
                    return None;
                }
                escaped = false;
                empty = false;
            } else if c == '"' {
                self.s = &self.s[i + 1..];
                return Some(empty);
            } else if c == '\\' {
                escaped = true;
            } else if vchar(c) || c == ' ' || c == '\t' {
                empty = false;
            } else {
                return None;
            }
        }
        None
    }

    fn phrase(&mut self) -> bool {
        let mut words = 0;
        loop {
            if words > 0 && !self.skip_cfws() {
                return false;
            }
            self.skip_space();
            if self.s.is_empty() {
                break;
            }
            let saved = self.s;
            let ok = if self.s.starts_with('"') {
                self.quoted().is_some()
            } else {
                self.atom(true)
            };
            if !ok {
                self.s = saved;
                break;
            }
            words += 1;
        }
        words > 0
    }

    fn skip_cfws(&mut self) -> bool {
        self.skip_space();
        while self.eat('(') {
            if !self.comment() {
                return false;
            }
            self.skip_space();
        }
        true
    }

    /// The rest of a parenthesized comment, nested parentheses and escapes included.
    fn comment(&mut self) -> bool {
        let mut depth = 1;
        let b = self.s.as_bytes();
        let mut i = 0;
        while i < b.len() && depth > 0 {
            match b[i] {
                b'\\' if b.len() - i > 1 => i += 1,
                b'(' => depth += 1,
                b')' => depth -= 1,
                _ => {}
            }
            i += 1;
        }
        self.s = self.s.get(i..).unwrap_or("");
        depth == 0
    }
}
