package main

import (
	"context"
	"errors"
	"io"
)

// runServe is a placeholder until the serve command is implemented.
func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
