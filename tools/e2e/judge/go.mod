// e2e-judge: judges a run of an upstream e2e suite (operator-controller's Godog suite, OLM v0's
// Ginkgo suite) against olm's list of known differences, KNOWN.tsv. Standard library only; the
// harnesses' build scripts build it (tools/e2e/build.sh, tools/e2e/olm-v0/build.sh).
module olm.local/e2e/judge

go 1.26.3
