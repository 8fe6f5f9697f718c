package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
)

const tokenUsage = `usage: cropkit token create NAME --data DIR   issue a token (printed as the last line)
       cropkit token list NAME --data DIR     list NAME's tokens (ids and times, never secrets)
       cropkit token revoke NAME --data DIR [--id N | --all]
                                              revoke one token of NAME, or all of them`

// runToken manages tokens of an existing data directory (works while a
// server runs on it).
func runToken(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "create" && args[0] != "list" && args[0] != "revoke") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(stderr, tokenUsage)
			return flag.ErrHelp
		}
		return errors.New(tokenUsage)
	}
	verb := args[0]
	fs := flag.NewFlagSet("token "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data", "./cropkit-data", "data directory (must exist)")
	storage := addStorageFlags(fs)
	id := fs.Int64("id", 0, "revoke: the token id (see token list)")
	all := fs.Bool("all", false, "revoke: every token of the user")
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New(tokenUsage)
	}
	var core *archive.Archive
	if *storage.db != "" || *storage.blobs != "" {
		core, err = storage.open(ctx, *dataDir, false, archive.Config{})
	} else {
		core, err = openData(ctx, *dataDir, "--data")
	}
	if err != nil {
		return err
	}
	defer core.Close()
	name := pos[0]
	switch verb {
	case "create":
		tok, err := core.CreateToken(ctx, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "token for %s\n%s\n", name, tok)
	case "list":
		u, err := core.UserByName(ctx, name)
		if err != nil {
			return err
		}
		toks, err := core.Tokens(ctx, u)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%-6s %-20s %s\n", "ID", "CREATED", "EXPIRES")
		for _, t := range toks {
			exp := "never"
			if !t.Expires.IsZero() {
				exp = t.Expires.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(stdout, "%-6d %-20s %s\n", t.ID, t.Created.UTC().Format(time.RFC3339), exp)
		}
	case "revoke":
		if (*id == 0) == !*all {
			return errors.New("token revoke: give --id N or --all")
		}
		u, err := core.UserByName(ctx, name)
		if err != nil {
			return err
		}
		n, err := core.RevokeTokens(ctx, u, *id)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("token revoke: %s has no token %d", name, *id)
		}
		fmt.Fprintf(stdout, "revoked %d token(s) of %s\n", n, name)
	}
	return nil
}

// openData opens an existing data directory, naming the flag when it is missing.
func openData(ctx context.Context, dir, flagName string) (*archive.Archive, error) {
	core, err := backend.Open(ctx, dir, false, archive.Config{})
	if errors.Is(err, archive.ErrNotFound) {
		return nil, fmt.Errorf("%s %s: no cropkit data directory there (start `cropkit serve --data %s` once to create it)", flagName, dir, dir)
	}
	return core, err
}
