//go:build !race

package imagery

// raceBuild: see race_on_test.go.
const raceBuild = false
