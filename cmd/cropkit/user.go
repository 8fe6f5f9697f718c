package main

import (
	"context"
	"errors"
	"io"
)

// runUser is a placeholder until the user command is implemented.
func runUser(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
