package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/cropkit/cropkit/server"
)

// runToken issues tokens: cropkit token create NAME --data DIR prints a new
// token for user NAME as the last line of stdout (works while a server runs).
func runToken(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	const usage = "usage: cropkit token create NAME --data DIR"
	if len(args) == 0 || args[0] != "create" {
		return errors.New(usage)
	}
	fs := flag.NewFlagSet("token create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data", "./cropkit-data", "data directory")
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New(usage)
	}
	store, err := server.OpenStore(ctx, *dataDir)
	if err != nil {
		return err
	}
	defer store.Close()
	tok, err := store.CreateToken(ctx, pos[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "token for %s\n%s\n", pos[0], tok)
	return nil
}
