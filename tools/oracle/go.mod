module olm.local/tools/oracle

go 1.25.0

require (
	github.com/Masterminds/semver/v3 v3.5.0
	github.com/blang/semver/v4 v4.0.0
)
