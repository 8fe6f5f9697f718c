package main

import (
	"context"
	"errors"
	"io"
)

// runToken is a placeholder until the token command is implemented.
func runToken(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
