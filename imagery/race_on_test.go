//go:build race

package imagery

// raceBuild: the race detector reserves terabytes of shadow address space,
// so a race-built binary cannot run under an address-space limit.
const raceBuild = true
