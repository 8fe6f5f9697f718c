package main

import (
	"context"
	"errors"
	"io"
)

// runZones is a placeholder until the zones command is implemented.
func runZones(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
