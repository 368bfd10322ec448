module olm.local/tools/goprint

go 1.25.0
