//go:build unix

package testenv

import (
	"syscall"
	"time"
)

// ProcessCPU is the user+system CPU time this process has used so far:
// benchmarks report CPU per operation with it, which other work on a
// shared machine disturbs far less than wall time.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
