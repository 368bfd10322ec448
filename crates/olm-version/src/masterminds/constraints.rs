//! Masterminds/semver v3.5 constraints: the range grammar of `ClusterExtension`
//! `spec.source.catalog.version`.

use std::fmt;

use super::lexer::{self, RawComparator};
use super::version::{Version, compare_prerelease};
use crate::go::quote;

/// Longest constraint string Masterminds accepts, in bytes.
pub const MAX_CONSTRAINT_LEN: usize = 512;
/// Most `||` groups Masterminds accepts.
pub const MAX_CONSTRAINT_GROUPS: usize = 32;

/// Why a constraint string was refused; the texts are Masterminds' own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConstraintError {
    /// The whole string is longer than [`MAX_CONSTRAINT_LEN`] bytes.
    #[error("constraint string is too long (max 512 bytes)")]
    TooLong,
    /// The string has more than [`MAX_CONSTRAINT_GROUPS`] `||` groups.
    #[error("too many constraint groups (max 32)")]
    TooManyGroups,
    /// The OR-group (as split on `||`, after hyphen-range rewriting) does not follow the grammar.
    #[error("improper constraint: {}", quote(.0))]
    Improper(String),
    /// The grammar matched but the version inside is not a number Masterminds can build
    /// (`x1`, `1|2`, a part beyond 64 bits, a prerelease with leading zeros).
    #[error("constraint parser error")]
    Parser,
}

/// The operator of one comparator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `=` or no operator: equality, or a tilde range when the version has wildcards.
    TildeOrEqual,
    NotEqual,
    Greater,
    Less,
    GreaterEqual,
    LessEqual,
    Tilde,
    Caret,
}

impl Op {
    fn from_text(op: &str) -> Op {
        match op {
            "!=" => Op::NotEqual,
            ">" => Op::Greater,
            "<" => Op::Less,
            ">=" | "=>" => Op::GreaterEqual,
            "<=" | "=<" => Op::LessEqual,
            "~" | "~>" => Op::Tilde,
            "^" => Op::Caret,
            _ => Op::TildeOrEqual,
        }
    }
}

/// Which parts of the comparator's version were wildcards or missing. Masterminds calls these
/// "dirty"; a missing or wildcard part also makes every later part irrelevant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wild {
    None,
    /// `1.2`, `1.2.x`: the patch is open.
    Patch,
    /// `1`, `1.x`: minor and patch are open.
    Minor,
    /// `x`, `*`: everything is open (the version is 0.0.0).
    Major,
}

/// Why a comparator refused a version, kept symbolic so that matching never allocates; the text
/// is built only when [`Constraints::validate`] asks for it.
#[derive(Debug, Clone, Copy)]
enum Reason {
    Prerelease,
    /// The words between the two quoted versions, and a sentence that follows.
    Mismatch(&'static str, &'static str),
}

#[derive(Debug, Clone)]
struct Comparator {
    op: Op,
    /// The operator as written (kept for display).
    op_text: String,
    /// The version as written (used in messages, like upstream).
    orig: String,
    con: Version,
    wild: Wild,
}

#[derive(Debug, Clone)]
struct Group {
    comparators: Vec<Comparator>,
    /// Whether a comparator of this group names a prerelease, which lets prereleases match.
    has_pre: bool,
}

/// A parsed constraint: OR of AND-groups of comparators.
#[derive(Debug, Clone)]
pub struct Constraints {
    groups: Vec<Group>,
}

fn is_x(s: &str) -> bool {
    matches!(s, "x" | "X" | "*")
}

impl Comparator {
    fn new(raw: &RawComparator<'_>) -> Result<Comparator, ConstraintError> {
        let v = raw.version;
        let (wild, text) = if is_x(v.major) {
            (Wild::Major, format!("0.0.0{}", v.dash_pre))
        } else if v.minor.is_none_or(is_x) {
            (Wild::Minor, format!("{}.0.0{}", v.major, v.dash_pre))
        } else if v.patch.is_none_or(is_x) {
            (
                Wild::Patch,
                format!(
                    "{}.{}.0{}",
                    v.major,
                    v.minor.unwrap_or_default(),
                    v.dash_pre
                ),
            )
        } else {
            (Wild::None, v.text.to_owned())
        };
        let con = Version::parse(&text).map_err(|_| ConstraintError::Parser)?;
        Ok(Comparator {
            op: Op::from_text(raw.op),
            op_text: raw.op.to_owned(),
            orig: v.text.to_owned(),
            con,
            wild,
        })
    }

    fn minor_dirty(&self) -> bool {
        self.wild == Wild::Minor
    }

    fn patch_dirty(&self) -> bool {
        self.wild == Wild::Patch
    }

    fn dirty(&self) -> bool {
        self.wild != Wild::None
    }

    /// Checks `v`; the error is Masterminds' explanation of a mismatch.
    fn check(&self, v: &Version, include_pre: bool) -> Result<(), Reason> {
        if !v.prerelease().is_empty() && !include_pre {
            return Err(Reason::Prerelease);
        }
        let c = &self.con;
        let fail = |middle: &'static str| Reason::Mismatch(middle, "");
        match self.op {
            Op::TildeOrEqual if self.dirty() => self.tilde(v),
            Op::TildeOrEqual => ok_or(v == c, || fail("is not equal to")),
            Op::NotEqual => self.not_equal(v),
            Op::Greater => {
                let equal_msg = || fail("is less than or equal to");
                if !self.dirty() {
                    return ok_or(v > c, equal_msg);
                }
                if v.major() != c.major() {
                    return ok_or(v.major() > c.major(), equal_msg);
                }
                match self.wild {
                    Wild::Minor => Err(equal_msg()),
                    Wild::Patch => ok_or(v.minor() > c.minor(), equal_msg),
                    Wild::Major | Wild::None => ok_or(v > c, equal_msg),
                }
            }
            Op::Less => ok_or(v < c, || fail("is greater than or equal to")),
            Op::GreaterEqual => ok_or(v >= c, || fail("is less than")),
            Op::LessEqual => {
                let msg = || fail("is greater than");
                if !self.dirty() {
                    return ok_or(v <= c, msg);
                }
                if v.major() > c.major()
                    || (v.major() == c.major() && v.minor() > c.minor() && !self.minor_dirty())
                {
                    return Err(msg());
                }
                Ok(())
            }
            Op::Tilde => self.tilde(v),
            Op::Caret => self.caret(v),
        }
    }

    /// Masterminds' text for a mismatch: `"VERSION" MIDDLE "CONSTRAINT-VERSION"SUFFIX`.
    fn explain(&self, v: &Version, reason: Reason) -> String {
        match reason {
            Reason::Prerelease => prerelease_message(v),
            Reason::Mismatch(middle, suffix) => {
                format!(
                    "{} {middle} {}{suffix}",
                    quote(&v.to_string()),
                    quote(&self.orig)
                )
            }
        }
    }

    fn not_equal(&self, v: &Version) -> Result<(), Reason> {
        let c = &self.con;
        let equal = || Reason::Mismatch("is equal to", "");
        if self.dirty() {
            if c.major() != v.major() {
                return Ok(());
            }
            if c.minor() != v.minor() && !self.minor_dirty() {
                return Ok(());
            } else if self.minor_dirty() {
                return Err(equal());
            } else if c.patch() != v.patch() && !self.patch_dirty() {
                return Ok(());
            } else if self.patch_dirty() {
                if !v.prerelease().is_empty() || !c.prerelease().is_empty() {
                    return ok_or(
                        compare_prerelease(v.prerelease(), c.prerelease()).is_ne(),
                        equal,
                    );
                }
                return Err(equal());
            }
        }
        ok_or(v != c, equal)
    }

    fn tilde(&self, v: &Version) -> Result<(), Reason> {
        let c = &self.con;
        if v < c {
            return Err(Reason::Mismatch("is less than", ""));
        }
        // ~0.0.0 (and `x`, `*`) accept everything at or above 0.0.0.
        if c.major() == 0
            && c.minor() == 0
            && c.patch() == 0
            && !self.minor_dirty()
            && !self.patch_dirty()
        {
            return Ok(());
        }
        if v.major() != c.major() {
            return Err(Reason::Mismatch("does not have same major version as", ""));
        }
        if v.minor() != c.minor() && !self.minor_dirty() {
            return Err(Reason::Mismatch(
                "does not have same major and minor version as",
                "",
            ));
        }
        Ok(())
    }

    fn caret(&self, v: &Version) -> Result<(), Reason> {
        let c = &self.con;
        if v < c {
            return Err(Reason::Mismatch("is less than", ""));
        }
        let same_major = || Reason::Mismatch("does not have same major version as", "");
        if c.major() > 0 || self.minor_dirty() {
            return ok_or(v.major() == c.major(), same_major);
        }
        if v.major() > 0 {
            return Err(same_major());
        }
        if c.minor() > 0 || self.patch_dirty() {
            return ok_or(v.minor() == c.minor(), || {
                Reason::Mismatch(
                    "does not have same minor version as",
                    ". Expected minor versions to match when constraint major version is 0",
                )
            });
        }
        if v.minor() > 0 {
            return Err(Reason::Mismatch("does not have same minor version as", ""));
        }
        ok_or(c.patch() == v.patch(), || {
            Reason::Mismatch(
                "does not equal",
                ". Expect version and constraint to equal when major and minor versions are 0",
            )
        })
    }
}

fn ok_or(ok: bool, msg: impl FnOnce() -> Reason) -> Result<(), Reason> {
    if ok { Ok(()) } else { Err(msg()) }
}

fn prerelease_message(v: &Version) -> String {
    format!(
        "{} is a prerelease version and the constraint is only looking for release versions",
        quote(&v.to_string())
    )
}

impl Constraints {
    /// Parses a constraint string as Masterminds' `NewConstraint` does.
    pub fn parse(s: &str) -> Result<Constraints, ConstraintError> {
        if s.len() > MAX_CONSTRAINT_LEN {
            return Err(ConstraintError::TooLong);
        }
        let rewritten = lexer::rewrite_hyphen_ranges(s);
        let ors: Vec<&str> = rewritten.split("||").collect();
        if ors.len() > MAX_CONSTRAINT_GROUPS {
            return Err(ConstraintError::TooManyGroups);
        }
        let groups = ors
            .iter()
            .map(|or| {
                let raws = lexer::and_group(or)
                    .ok_or_else(|| ConstraintError::Improper((*or).to_owned()))?;
                let comparators = raws
                    .iter()
                    .map(Comparator::new)
                    .collect::<Result<Vec<_>, _>>()?;
                let has_pre = comparators.iter().any(|c| !c.con.prerelease().is_empty());
                Ok(Group {
                    comparators,
                    has_pre,
                })
            })
            .collect::<Result<Vec<_>, ConstraintError>>()?;
        Ok(Constraints { groups })
    }

    /// Whether `v` satisfies the constraint (Masterminds' `Check`).
    ///
    /// A prerelease version satisfies an AND-group only when a comparator of that group names a
    /// prerelease itself: `>=1.0.0-0` lets `1.5.0-alpha` in, `>=1.0.0` does not.
    pub fn matches(&self, v: &Version) -> bool {
        self.groups
            .iter()
            .any(|g| g.comparators.iter().all(|c| c.check(v, g.has_pre).is_ok()))
    }

    /// Like [`Constraints::matches`], with Masterminds' reasons when `v` does not match
    /// (`Validate`): every failing comparator of every group, the prerelease reason only once.
    pub fn validate(&self, v: &Version) -> Result<(), Vec<String>> {
        let mut errors = Vec::new();
        let mut prerelease_reported = false;
        for g in &self.groups {
            let mut joy = true;
            for c in &g.comparators {
                if !g.has_pre && !v.prerelease().is_empty() {
                    if !prerelease_reported {
                        errors.push(prerelease_message(v));
                        prerelease_reported = true;
                    }
                    joy = false;
                } else if let Err(reason) = c.check(v, g.has_pre) {
                    errors.push(c.explain(v, reason));
                    joy = false;
                }
            }
            if joy {
                return Ok(());
            }
        }
        Err(errors)
    }
}

impl fmt::Display for Constraints {
    /// The constraint as Masterminds prints it: comparators space-separated, groups joined by ` || `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, g) in self.groups.iter().enumerate() {
            if i > 0 {
                f.write_str(" || ")?;
            }
            for (j, c) in g.comparators.iter().enumerate() {
                if j > 0 {
                    f.write_str(" ")?;
                }
                write!(f, "{}{}", c.op_text, c.orig)?;
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for Constraints {
    type Err = ConstraintError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Constraints::parse(s)
    }
}
