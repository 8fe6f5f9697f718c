//go:build unix

package testenv

import "syscall"

// detached puts a helper process in its own session, so a terminal's
// interrupt of the tests does not skip its cleanup.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
