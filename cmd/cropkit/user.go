package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/cropkit/cropkit/archive"
)

// parseInterspersed parses flags that may come before or after positional
// arguments ("user add NAME --data DIR") and returns the positionals.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// runUser manages accounts: cropkit user add NAME --data DIR [--indices ndvi,…] [--password-stdin] [--admin].
// It opens the data directory's database directly, so it works whether or
// not a server runs on it. The new user's token is the last line of stdout.
func runUser(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(stderr, "usage: cropkit user add NAME --data DIR [--indices ndvi,ndre,…] [--password-stdin] [--admin]")
		return flag.ErrHelp
	}
	if len(args) == 0 || args[0] != "add" {
		return errors.New("usage: cropkit user add NAME --data DIR [--indices ndvi,ndre,…] [--password-stdin] [--admin]")
	}
	fs := flag.NewFlagSet("user add", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data", "./cropkit-data", "data directory (created when missing)")
	storage := addStorageFlags(fs)
	indices := fs.String("indices", "", "comma-separated indices the user may use (default: all)")
	passwordStdin := fs.Bool("password-stdin", false, "read a password for POST /login from the first line of stdin")
	admin := fs.Bool("admin", false, "make the user an administrator (may ingest scenes)")
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New("usage: cropkit user add NAME --data DIR [--indices ndvi,ndre,…] [--password-stdin] [--admin]")
	}
	nu := archive.NewUser{Name: pos[0], Admin: *admin}
	if *indices != "" {
		nu.Indices = []string{}
		for _, n := range strings.Split(*indices, ",") {
			if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
				nu.Indices = append(nu.Indices, n)
			}
		}
	}
	if *passwordStdin {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read password: %w", err)
		}
		nu.Password = strings.TrimRight(line, "\r\n")
		if nu.Password == "" {
			return errors.New("empty password on stdin")
		}
	}
	// The one command that may start a data directory (accounts before the
	// first serve); the others refuse a missing one.
	core, err := storage.open(ctx, *dataDir, true, archive.Config{})
	if err != nil {
		return err
	}
	defer core.Close()
	if _, err := core.CreateUser(ctx, nu); err != nil {
		if errors.Is(err, archive.ErrInvalid) {
			return fmt.Errorf("--indices or NAME: %w", err)
		}
		return err
	}
	tok, err := core.CreateToken(ctx, nu.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "created user %s\n%s\n", nu.Name, tok)
	return nil
}
