// Wrapper module that builds OLM v0's own end-to-end suite (operator-lifecycle-manager's test/e2e,
// a Ginkgo suite) and the Ginkgo command that runs it in parallel, to judge olm's OLM v0. It holds
// no code (tools/e2e/judge judges a run). tools/e2e/olm-v0/build.sh copies the pinned
// upstream module to ./upstream (see the replace below): the suite reads its test data from its
// source folder. Every module version the suite needs is served by the module proxy, so no other
// replace is needed. go.sum is upstream's.
module olm.local/e2e/olmv0

go 1.26.3

require (
	github.com/onsi/ginkgo/v2 v2.32.0
	github.com/operator-framework/operator-lifecycle-manager v0.46.0
)

replace github.com/operator-framework/operator-lifecycle-manager => ./upstream
