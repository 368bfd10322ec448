//! The resolver's solver: variables with constraints, solved with preferences, as upstream's
//! `pkg/controller/registry/resolver/solver` does on the gini SAT solver.
//!
//! Why a SAT solver and not a plain search: a subscription's candidates, their dependencies and
//! the "one provider per API, one bundle per package" invariants interact across packages; a
//! CDCL solver decides them exactly, and its unsatisfiable cores name the constraints that
//! conflict, which is what a person needs to act.
//!
//! How it mirrors upstream, step by step:
//! 1. every constraint is guarded by an activation literal, so an unsatisfiable answer comes
//!    with the failed activation literals — the constraints in conflict;
//! 2. anchors (variables with a Mandatory constraint) are assumed, then a search walks each
//!    anchor's Dependency constraints in order, guessing the first candidate and backtracking to
//!    the next when the guess cannot be satisfied (the order is the preference);
//! 3. among solutions that keep every guess and exclude what the first solution excluded, the
//!    one with the fewest other variables wins (upstream's cardinality pass).
//!
//! Where it differs: upstream tests a guess by unit propagation only and solves fully at the
//! end; here every guess is solved fully (incrementally), so a bad guess is dropped at once
//! instead of after a later backtrack — the preferred solution is the same. Upstream's input is a
//! Go map (its order, and so its anchors' order, varies run to run); here it is the order the
//! variables were added. Upstream reports the failed assumptions as they come; here the conflict
//! is shrunk to a minimal one (dropping any constraint would make it satisfiable), so the message
//! lists only constraints that matter.

use std::collections::{HashMap, HashSet, VecDeque};

use rustsat::encodings::card::{BoundUpper, Totalizer};
use rustsat::instances::{BasicVarManager, ManageVars};
use rustsat::solvers::{Solve, SolveIncremental, SolverResult};
use rustsat::types::{Clause, Lit, TernaryVal};
use rustsat_batsat::BasicSolver;

/// What a constraint requires of the variable it belongs to (the subject).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// The subject must be chosen; makes it an anchor of the search.
    Mandatory,
    /// The subject must not be chosen.
    Prohibited,
    /// If the subject is chosen, so is one of these, preferred in this order.
    Dependency(Vec<String>),
    /// The subject and this one are not both chosen.
    Conflict(String),
    /// At most `n` of these are chosen.
    AtMost(usize, Vec<String>),
}

/// A rule with the sentence that explains it when it takes part in a conflict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraint {
    /// The rule.
    pub rule: Rule,
    /// The sentence; `None` uses upstream's generic wording for the rule.
    pub message: Option<String>,
}

impl Constraint {
    /// A rule explained by `message` (upstream's `PrettyConstraint`).
    pub fn pretty(rule: Rule, message: impl Into<String>) -> Constraint {
        Constraint {
            rule,
            message: Some(message.into()),
        }
    }

    /// The sentence for this constraint on `subject`, in upstream's words.
    pub fn describe(&self, subject: &str) -> String {
        if let Some(message) = &self.message {
            return message.clone();
        }
        match &self.rule {
            Rule::Mandatory => format!("{subject} is mandatory"),
            Rule::Prohibited => format!("{subject} is prohibited"),
            Rule::Dependency(ids) if ids.is_empty() => {
                format!("{subject} has a dependency without any candidates to satisfy it")
            }
            Rule::Dependency(ids) => {
                format!("{subject} requires at least one of {}", ids.join(", "))
            }
            Rule::Conflict(other) => format!("{subject} conflicts with {other}"),
            Rule::AtMost(n, ids) => {
                format!("{subject} permits at most {n} of {}", ids.join(", "))
            }
        }
    }
}

/// A variable: an identifier and the constraints it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    /// Unique among the input.
    pub id: String,
    /// Its constraints, in order.
    pub constraints: Vec<Constraint>,
}

/// Why solving failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SolveError {
    /// No choice satisfies every constraint; the conflicting constraints' sentences, sorted.
    #[error("{}", not_satisfiable_message(.0))]
    NotSatisfiable(Vec<String>),
    /// The input is inconsistent (a duplicate or unknown identifier): a resolver defect.
    #[error("{0}")]
    Input(String),
    /// The SAT solver failed (out of memory).
    #[error("internal solver failure: {0}")]
    Internal(String),
}

/// Upstream's `NotSatisfiable.Error()` text.
fn not_satisfiable_message(conflicts: &[String]) -> String {
    if conflicts.is_empty() {
        "constraints not satisfiable".to_owned()
    } else {
        format!("constraints not satisfiable: {}", conflicts.join(", "))
    }
}

/// Variables and constraints translated to clauses.
struct Encoded {
    solver: BasicSolver,
    vars: BasicVarManager,
    /// A literal per input variable, by position.
    lits: Vec<Lit>,
    /// Activation literal → (variable index, constraint index); one constraint may own several
    /// (an at-most bound is enforced by several literals).
    activations: HashMap<Lit, (usize, usize)>,
    /// Every activation literal, in input order (assumed together).
    active: Vec<Lit>,
    /// Per variable, its dependencies' candidate lists, resolved to variable indices.
    dependencies: Vec<Vec<Vec<usize>>>,
}

fn internal(err: impl std::fmt::Display) -> SolveError {
    SolveError::Internal(err.to_string())
}

impl Encoded {
    fn new(input: &[Variable]) -> Result<Encoded, SolveError> {
        let mut index = HashMap::with_capacity(input.len());
        for (i, variable) in input.iter().enumerate() {
            if index.insert(variable.id.as_str(), i).is_some() {
                return Err(SolveError::Input(format!(
                    "duplicate identifier {:?} in input",
                    variable.id
                )));
            }
        }
        let find = |id: &str| {
            index.get(id).copied().ok_or_else(|| {
                SolveError::Input(format!("variable {id:?} referenced but not provided"))
            })
        };
        let mut vars = BasicVarManager::default();
        let lits: Vec<Lit> = input.iter().map(|_| vars.new_lit()).collect();
        let mut solver = BasicSolver::default();
        let mut activations = HashMap::new();
        let mut active = Vec::new();
        let mut dependencies = vec![Vec::new(); input.len()];
        for (v, variable) in input.iter().enumerate() {
            let subject = lits[v];
            for (c, constraint) in variable.constraints.iter().enumerate() {
                let mut guards = Vec::new();
                match &constraint.rule {
                    Rule::Mandatory => {
                        let a = vars.new_lit();
                        add(&mut solver, [!a, subject])?;
                        guards.push(a);
                    }
                    Rule::Prohibited => {
                        let a = vars.new_lit();
                        add(&mut solver, [!a, !subject])?;
                        guards.push(a);
                    }
                    Rule::Dependency(ids) => {
                        let targets = ids
                            .iter()
                            .map(|id| find(id))
                            .collect::<Result<Vec<_>, _>>()?;
                        let a = vars.new_lit();
                        let clause = [!a, !subject]
                            .into_iter()
                            .chain(targets.iter().map(|&t| lits[t]));
                        add(&mut solver, clause)?;
                        dependencies[v].push(targets);
                        guards.push(a);
                    }
                    Rule::Conflict(other) => {
                        let o = lits[find(other)?];
                        let a = vars.new_lit();
                        add(&mut solver, [!a, !subject, !o])?;
                        guards.push(a);
                    }
                    Rule::AtMost(n, ids) => {
                        let members = ids
                            .iter()
                            .map(|id| find(id).map(|t| lits[t]))
                            .collect::<Result<Vec<_>, _>>()?;
                        if *n < members.len() {
                            let mut totalizer = Totalizer::from(members);
                            totalizer
                                .encode_ub(*n..=*n, &mut solver, &mut vars)
                                .map_err(internal)?;
                            guards = totalizer.enforce_ub(*n).map_err(internal)?;
                        }
                    }
                }
                for guard in guards {
                    activations.insert(guard, (v, c));
                    active.push(guard);
                }
            }
        }
        Ok(Encoded {
            solver,
            vars,
            lits,
            activations,
            active,
            dependencies,
        })
    }

    fn solve(&mut self, assumptions: &[Lit]) -> Result<bool, SolveError> {
        match self.solver.solve_assumps(assumptions).map_err(internal)? {
            SolverResult::Sat => Ok(true),
            SolverResult::Unsat => Ok(false),
            SolverResult::Interrupted => Err(SolveError::Internal("solver interrupted".to_owned())),
        }
    }

    fn value(&self, lit: Lit) -> Result<bool, SolveError> {
        Ok(self.solver.lit_val(lit).map_err(internal)? == TernaryVal::True)
    }

    /// The constraints (variable, constraint) behind the last unsatisfiable answer.
    fn core(&mut self) -> Result<Vec<Lit>, SolveError> {
        let core = self.solver.core().map_err(internal)?;
        Ok(core
            .into_iter()
            .map(|l| !l)
            .filter(|l| self.activations.contains_key(l))
            .collect())
    }
}

fn add(solver: &mut BasicSolver, lits: impl IntoIterator<Item = Lit>) -> Result<(), SolveError> {
    solver
        .add_clause(lits.into_iter().collect::<Clause>())
        .map_err(internal)
}

/// Chooses variables satisfying every constraint, preferring earlier candidates of each
/// dependency and, after that, as few other variables as possible. Returns the chosen
/// variables' indices into `input`, in input order.
pub fn solve(input: &[Variable]) -> Result<Vec<usize>, SolveError> {
    let mut enc = Encoded::new(input)?;
    let anchors: Vec<usize> = input
        .iter()
        .enumerate()
        .filter(|(_, v)| v.constraints.iter().any(|c| c.rule == Rule::Mandatory))
        .map(|(i, _)| i)
        .collect();
    let mut base = enc.active.clone();
    base.extend(anchors.iter().map(|&i| enc.lits[i]));
    if !enc.solve(&base)? {
        return Err(not_satisfiable(&mut enc, input));
    }
    let guessed = search(&mut enc, &base, &anchors)?;
    minimise(&mut enc, &base, &guessed)
}

/// A dependency still to decide: its candidates and the next one to try.
struct Choice {
    candidates: Vec<usize>,
    next: usize,
}

/// A decision on the guess stack: the guessed candidate (none when the choice was already
/// satisfied, or had no candidate left) and how many choices it queued.
struct Guess {
    choice: Choice,
    guessed: Option<usize>,
    children: usize,
}

/// Upstream's preference search: breadth-first over anchors and their dependencies, guessing
/// candidates in order and backtracking on conflict. Returns the guessed variables.
fn search(enc: &mut Encoded, base: &[Lit], anchors: &[usize]) -> Result<Vec<usize>, SolveError> {
    let mut choices: VecDeque<Choice> = anchors
        .iter()
        .map(|&a| Choice {
            candidates: vec![a],
            next: 0,
        })
        .collect();
    let mut guesses: Vec<Guess> = Vec::new();
    let mut assumed: HashSet<usize> = HashSet::new();
    let mut assumptions = base.to_vec();
    // Whether the current assumptions are satisfiable; one entry per guess level.
    let mut results = vec![true];
    loop {
        let satisfiable = results.last().copied().unwrap_or(true);
        if !satisfiable {
            let Some(guess) = guesses.pop() else {
                return Err(SolveError::Internal(
                    "the anchors became unsatisfiable".to_owned(),
                ));
            };
            pop_guess(
                guess,
                &mut choices,
                &mut assumed,
                &mut assumptions,
                &mut results,
            );
            continue;
        }
        let Some(choice) = choices.pop_front() else {
            break;
        };
        let already = choice.candidates.iter().any(|c| assumed.contains(c));
        let guessed = if already {
            None
        } else {
            choice.candidates.get(choice.next).copied()
        };
        let mut guess = Guess {
            choice,
            guessed,
            children: 0,
        };
        if let Some(g) = guessed {
            for candidates in &enc.dependencies[g] {
                if !candidates.is_empty() {
                    guess.children += 1;
                    choices.push_back(Choice {
                        candidates: candidates.clone(),
                        next: 0,
                    });
                }
            }
            assumed.insert(g);
            assumptions.push(enc.lits[g]);
            let ok = enc.solve(&assumptions)?;
            results.push(ok);
        }
        guesses.push(guess);
    }
    Ok(guesses.iter().filter_map(|g| g.guessed).collect())
}

/// Undoes a guess: its queued choices go, and its choice comes back to the front with the next
/// candidate to try.
fn pop_guess(
    guess: Guess,
    choices: &mut VecDeque<Choice>,
    assumed: &mut HashSet<usize>,
    assumptions: &mut Vec<Lit>,
    results: &mut Vec<bool>,
) {
    let mut choice = guess.choice;
    if let Some(g) = guess.guessed {
        assumed.remove(&g);
        assumptions.pop();
        results.pop();
        choice.next += 1;
    }
    for _ in 0..guess.children {
        choices.pop_back();
    }
    choices.push_front(choice);
}

/// Keeps the guesses and what the preferred solution excluded, and among the rest chooses as few
/// variables as possible.
fn minimise(enc: &mut Encoded, base: &[Lit], guessed: &[usize]) -> Result<Vec<usize>, SolveError> {
    let mut assumptions = base.to_vec();
    assumptions.extend(guessed.iter().map(|&g| enc.lits[g]));
    if !enc.solve(&assumptions)? {
        return Err(SolveError::Internal(
            "the preferred solution vanished".to_owned(),
        ));
    }
    let guessed: HashSet<usize> = guessed.iter().copied().collect();
    let mut extras = Vec::new();
    for (i, &lit) in enc.lits.iter().enumerate() {
        if guessed.contains(&i) {
            continue;
        }
        if enc.value(lit)? {
            extras.push(lit);
        } else {
            assumptions.push(!lit);
        }
    }
    if !extras.is_empty() {
        let n = extras.len();
        let mut totalizer = Totalizer::from(extras);
        totalizer
            .encode_ub(0..=n, &mut enc.solver, &mut enc.vars)
            .map_err(internal)?;
        for w in 0..=n {
            let mut bounded = assumptions.clone();
            bounded.extend(totalizer.enforce_ub(w).map_err(internal)?);
            if enc.solve(&bounded)? {
                break;
            }
        }
    } else if !enc.solve(&assumptions)? {
        return Err(SolveError::Internal(
            "the preferred solution vanished".to_owned(),
        ));
    }
    let mut chosen = Vec::new();
    for (i, &lit) in enc.lits.iter().enumerate() {
        if enc.value(lit)? {
            chosen.push(i);
        }
    }
    Ok(chosen)
}

/// The conflict behind an unsatisfiable input, shrunk until every constraint in it matters.
fn not_satisfiable(enc: &mut Encoded, input: &[Variable]) -> SolveError {
    match minimal_conflict(enc) {
        Ok(lits) => {
            let mut seen = HashSet::new();
            let mut sentences: Vec<String> = lits
                .iter()
                .filter_map(|l| enc.activations.get(l).copied())
                .filter(|key| seen.insert(*key))
                .filter_map(|(v, c)| {
                    let variable = input.get(v)?;
                    Some(variable.constraints.get(c)?.describe(&variable.id))
                })
                .collect();
            sentences.sort();
            SolveError::NotSatisfiable(sentences)
        }
        Err(err) => err,
    }
}

/// Deletion-based core minimisation: a constraint whose removal keeps the rest unsatisfiable is
/// not part of the explanation. Bounded: a core is at most the input's constraints, each tried
/// once.
fn minimal_conflict(enc: &mut Encoded) -> Result<Vec<Lit>, SolveError> {
    let all = enc.active.clone();
    if enc.solve(&all)? {
        return Err(SolveError::Internal("conflict vanished".to_owned()));
    }
    let mut core = enc.core()?;
    // Constraints of one owner (an at-most bound's literals) stay together.
    let mut i = 0;
    while i < core.len() {
        let owner = enc.activations.get(&core[i]).copied();
        let trial: Vec<Lit> = core
            .iter()
            .copied()
            .filter(|l| enc.activations.get(l).copied() != owner)
            .collect();
        if enc.solve(&trial)? {
            i += 1;
        } else {
            let smaller = enc.core()?;
            let keep: HashSet<Lit> = smaller.iter().copied().collect();
            core.retain(|l| keep.contains(l));
        }
    }
    Ok(core)
}

#[cfg(test)]
mod tests;
