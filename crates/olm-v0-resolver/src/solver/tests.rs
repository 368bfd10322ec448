//! Table tests ported from upstream's `pkg/controller/registry/resolver/solver/solve_test.go`
//! (`TestSolve`, `TestNotSatisfiableError`, `TestDuplicateIdentifier`) in the OLM repo.

use super::*;

fn dep(ids: &[&str]) -> Constraint {
    Constraint {
        rule: Rule::Dependency(ids.iter().map(|s| (*s).to_owned()).collect()),
        message: None,
    }
}
fn mandatory() -> Constraint {
    Constraint {
        rule: Rule::Mandatory,
        message: None,
    }
}
fn prohibited() -> Constraint {
    Constraint {
        rule: Rule::Prohibited,
        message: None,
    }
}
fn conflict(id: &str) -> Constraint {
    Constraint {
        rule: Rule::Conflict(id.to_owned()),
        message: None,
    }
}
fn at_most(n: usize, ids: &[&str]) -> Constraint {
    Constraint {
        rule: Rule::AtMost(n, ids.iter().map(|s| (*s).to_owned()).collect()),
        message: None,
    }
}
fn var(id: &str, constraints: Vec<Constraint>) -> Variable {
    Variable {
        id: id.to_owned(),
        constraints,
    }
}

/// (name, variables, installed ids sorted, or the conflict sentences)
type Case = (
    &'static str,
    Vec<Variable>,
    Result<Vec<&'static str>, Vec<&'static str>>,
);

fn cases() -> Vec<Case> {
    vec![
        ("no variables", vec![], Ok(vec![])),
        (
            "unnecessary variable is not installed",
            vec![var("a", vec![])],
            Ok(vec![]),
        ),
        (
            "single mandatory variable is installed",
            vec![var("a", vec![mandatory()])],
            Ok(vec!["a"]),
        ),
        (
            "both mandatory and prohibited produce error",
            vec![var("a", vec![mandatory(), prohibited()])],
            Err(vec!["a is mandatory", "a is prohibited"]),
        ),
        (
            "dependency is installed",
            vec![var("a", vec![]), var("b", vec![mandatory(), dep(&["a"])])],
            Ok(vec!["a", "b"]),
        ),
        (
            "transitive dependency is installed",
            vec![
                var("a", vec![]),
                var("b", vec![dep(&["a"])]),
                var("c", vec![mandatory(), dep(&["b"])]),
            ],
            Ok(vec!["a", "b", "c"]),
        ),
        (
            "both dependencies are installed",
            vec![
                var("a", vec![]),
                var("b", vec![]),
                var("c", vec![mandatory(), dep(&["a"]), dep(&["b"])]),
            ],
            Ok(vec!["a", "b", "c"]),
        ),
        (
            "solution with first dependency is selected",
            vec![
                var("a", vec![]),
                var("b", vec![conflict("a")]),
                var("c", vec![mandatory(), dep(&["a", "b"])]),
            ],
            Ok(vec!["a", "c"]),
        ),
        (
            "solution with only first dependency is selected",
            vec![
                var("a", vec![]),
                var("b", vec![]),
                var("c", vec![mandatory(), dep(&["a", "b"])]),
            ],
            Ok(vec!["a", "c"]),
        ),
        (
            "solution with first dependency is selected (reverse)",
            vec![
                var("a", vec![]),
                var("b", vec![conflict("a")]),
                var("c", vec![mandatory(), dep(&["b", "a"])]),
            ],
            Ok(vec!["b", "c"]),
        ),
        (
            "two mandatory but conflicting packages",
            vec![
                var("a", vec![mandatory()]),
                var("b", vec![mandatory(), conflict("a")]),
            ],
            Err(vec![
                "a is mandatory",
                "b conflicts with a",
                "b is mandatory",
            ]),
        ),
        (
            "irrelevant dependencies don't influence search order",
            vec![
                var("a", vec![dep(&["x", "y"])]),
                var("b", vec![mandatory(), dep(&["y", "x"])]),
                var("x", vec![]),
                var("y", vec![]),
            ],
            Ok(vec!["b", "y"]),
        ),
        (
            "cardinality constraint prevents resolution",
            vec![
                var(
                    "a",
                    vec![mandatory(), dep(&["x", "y"]), at_most(1, &["x", "y"])],
                ),
                var("x", vec![mandatory()]),
                var("y", vec![mandatory()]),
            ],
            Err(vec![
                "a permits at most 1 of x, y",
                "x is mandatory",
                "y is mandatory",
            ]),
        ),
        (
            "cardinality constraint forces alternative",
            vec![
                var(
                    "a",
                    vec![mandatory(), dep(&["x", "y"]), at_most(1, &["x", "y"])],
                ),
                var("b", vec![mandatory(), dep(&["y"])]),
                var("x", vec![]),
                var("y", vec![]),
            ],
            Ok(vec!["a", "b", "y"]),
        ),
        (
            "two dependencies satisfied by one variable",
            vec![
                var("a", vec![mandatory(), dep(&["y"])]),
                var("b", vec![mandatory(), dep(&["x", "y"])]),
                var("x", vec![]),
                var("y", vec![]),
            ],
            Ok(vec!["a", "b", "y"]),
        ),
        (
            "foo two dependencies satisfied by one variable",
            vec![
                var("a", vec![mandatory(), dep(&["y", "z", "m"])]),
                var("b", vec![mandatory(), dep(&["x", "y"])]),
                var("x", vec![]),
                var("y", vec![]),
                var("z", vec![]),
                var("m", vec![]),
            ],
            Ok(vec!["a", "b", "y"]),
        ),
        (
            "result size larger than minimum due to preference",
            vec![
                var("a", vec![mandatory(), dep(&["x", "y"])]),
                var("b", vec![mandatory(), dep(&["y"])]),
                var("x", vec![]),
                var("y", vec![]),
            ],
            Ok(vec!["a", "b", "x", "y"]),
        ),
        (
            "only the least preferable choice is acceptable",
            vec![
                var("a", vec![mandatory(), dep(&["a1", "a2"])]),
                var("a1", vec![conflict("c1"), conflict("c2")]),
                var("a2", vec![conflict("c1")]),
                var("b", vec![mandatory(), dep(&["b1", "b2"])]),
                var("b1", vec![conflict("c1"), conflict("c2")]),
                var("b2", vec![conflict("c1")]),
                var("c", vec![mandatory(), dep(&["c1", "c2"])]),
                var("c1", vec![]),
                var("c2", vec![]),
            ],
            Ok(vec!["a", "a2", "b", "b2", "c", "c2"]),
        ),
        (
            "preferences respected with multiple dependencies per variable",
            vec![
                var(
                    "a",
                    vec![mandatory(), dep(&["x1", "x2"]), dep(&["y1", "y2"])],
                ),
                var("x1", vec![]),
                var("x2", vec![]),
                var("y1", vec![]),
                var("y2", vec![]),
            ],
            Ok(vec!["a", "x1", "y1"]),
        ),
        // Not upstream's: the conflict is shrunk to what matters (b's dependency on nothing is
        // irrelevant to a's clash).
        (
            "minimal conflict leaves out unrelated constraints",
            vec![
                var("a", vec![mandatory(), dep(&["x"])]),
                var("x", vec![prohibited()]),
                var("b", vec![mandatory(), dep(&["y"])]),
                var("y", vec![]),
            ],
            Err(vec![
                "a is mandatory",
                "a requires at least one of x",
                "x is prohibited",
            ]),
        ),
        (
            "a dependency without candidates",
            vec![var("a", vec![mandatory(), dep(&[])])],
            Err(vec![
                "a has a dependency without any candidates to satisfy it",
                "a is mandatory",
            ]),
        ),
    ]
}

#[test]
fn solve_table() {
    for (name, input, want) in cases() {
        let got = solve(&input).map(|chosen| {
            let mut ids: Vec<&str> = chosen.iter().map(|&i| input[i].id.as_str()).collect();
            ids.sort_unstable();
            ids
        });
        match (got, want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{name}"),
            (Err(SolveError::NotSatisfiable(got)), Err(want)) => assert_eq!(got, want, "{name}"),
            (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn not_satisfiable_text() {
    assert_eq!(
        SolveError::NotSatisfiable(vec![]).to_string(),
        "constraints not satisfiable"
    );
    assert_eq!(
        SolveError::NotSatisfiable(vec!["a is mandatory".into(), "b is prohibited".into()])
            .to_string(),
        "constraints not satisfiable: a is mandatory, b is prohibited"
    );
}

#[test]
fn duplicate_and_unknown_identifiers() {
    let err = solve(&[var("a", vec![]), var("a", vec![])]).unwrap_err();
    assert_eq!(err.to_string(), "duplicate identifier \"a\" in input");
    let err = solve(&[var("a", vec![mandatory(), dep(&["missing"])])]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "variable \"missing\" referenced but not provided"
    );
}

#[test]
fn pretty_messages_replace_generic_ones() {
    let input = vec![var(
        "subscription:s",
        vec![
            Constraint::pretty(Rule::Mandatory, "subscription s exists"),
            Constraint::pretty(
                Rule::Dependency(vec![]),
                "no operators found matching the criteria of subscription s",
            ),
        ],
    )];
    assert_eq!(
        solve(&input).unwrap_err().to_string(),
        "constraints not satisfiable: no operators found matching the criteria of subscription s, subscription s exists"
    );
}
