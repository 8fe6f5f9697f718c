package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/cropkit/cropkit/server"
)

// runIngest ingests scenes into a data directory (works while a server runs):
//
//	cropkit ingest --data DIR [--min-clear 0.6] [--date YYYY-MM-DD] SCENE...
//
// SCENE is a scene folder, a STAC item path or a STAC item URL. One line per
// scene on stdout; a scene that fails makes the exit status non-zero.
func runIngest(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data", "./cropkit-data", "data directory")
	minClear := fs.Float64("min-clear", server.DefaultMinClear, "fraction of a field's pixels that must be clear for a usable image")
	dateFlag := fs.String("date", "", "acquisition date YYYY-MM-DD for scenes without one in their metadata or name")
	workers := fs.Int("workers", 0, "fields ingested concurrently (0: number of CPUs)")
	verbose := fs.Bool("v", false, "log progress to stderr")
	scenes, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(scenes) == 0 {
		return errors.New("usage: cropkit ingest --data DIR [--min-clear 0.6] [--date YYYY-MM-DD] SCENE...")
	}
	var opts server.IngestOptions
	if *dateFlag != "" {
		t, err := time.Parse(server.DateLayout, *dateFlag)
		if err != nil {
			return fmt.Errorf("--date must be YYYY-MM-DD, got %q", *dateFlag)
		}
		opts.Date = t
	}
	logger := slog.New(slog.DiscardHandler)
	if *verbose {
		logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	store, err := server.OpenStore(ctx, *dataDir)
	if err != nil {
		return err
	}
	defer store.Close()
	srv, err := server.New(server.Config{Store: store, MinClear: *minClear, Workers: *workers, Logger: logger})
	if err != nil {
		return err
	}
	var errs []error
	for _, src := range scenes {
		start := time.Now()
		res, err := srv.Ingest(ctx, src, opts)
		fmt.Fprintf(stdout, "%s %s: %d fields, %d usable, %d unusable, %d outside, %d failed (%s)\n",
			res.Date, src, res.Fields, res.Usable, res.Unusable, res.Outside, res.Failed, time.Since(start).Round(time.Millisecond))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", src, err))
		}
	}
	return errors.Join(errs...)
}
