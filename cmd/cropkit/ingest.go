package main

import (
	"context"
	"errors"
	"io"
)

// runIngest is a placeholder until the ingest command is implemented.
func runIngest(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
