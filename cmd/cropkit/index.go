package main

import (
	"context"
	"errors"
	"io"
)

// runIndex is a placeholder until the index command is implemented.
func runIndex(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
