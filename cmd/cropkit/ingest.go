package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/cropkit/cropkit/archive"
)

// runIngest ingests scenes into an existing data directory (works while a
// server runs):
//
//	cropkit ingest --data DIR [--min-clear 0.6] [--date YYYY-MM-DD] [--sign-url URL] [--ingest-allow-host host:port] SCENE...
//
// SCENE is a scene folder, a STAC item path or a STAC item URL. An item
// URL's origin and --sign-url's may be private addresses (the operator
// named them); its assets on another private origin need
// --ingest-allow-host. One line per
// scene on stdout and a summary; a scene that fails makes the exit status
// non-zero. Progress goes to stderr.
func runIngest(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data", "./cropkit-data", "data directory (must exist: created by cropkit serve)")
	storage := addStorageFlags(fs)
	minClear := fs.Float64("min-clear", archive.DefaultMinClear, "fraction of a field's pixels that must be clear for a usable image")
	dateFlag := fs.String("date", "", "acquisition date YYYY-MM-DD for scenes without one in their metadata or name")
	workers := fs.Int("workers", 0, "fields ingested concurrently (0: number of CPUs)")
	verbose := fs.Bool("v", false, "log progress to stderr")
	remote := addRemoteFlags(fs)
	scenes, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(scenes) == 0 {
		return errors.New("usage: cropkit ingest --data DIR [--min-clear 0.6] [--date YYYY-MM-DD] SCENE...")
	}
	if !(*minClear > 0 && *minClear <= 1) {
		return fmt.Errorf("--min-clear must be a fraction in (0, 1], got %v", *minClear)
	}
	if *workers < 0 {
		return fmt.Errorf("--workers must not be negative, got %d", *workers)
	}
	var opts archive.IngestOptions
	if *dateFlag != "" {
		t, err := time.Parse(time.DateOnly, *dateFlag)
		if err != nil {
			return fmt.Errorf("--date must be YYYY-MM-DD, got %q", *dateFlag)
		}
		opts.Date = t
	}
	logger := slog.New(slog.DiscardHandler)
	if *verbose {
		logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	core, err := storage.open(ctx, *dataDir, false, archive.Config{MinClear: *minClear, Workers: *workers, Logger: logger, SignURL: remote.signURL, IngestAllowHosts: remote.allowHosts})
	if errors.Is(err, archive.ErrNotFound) {
		return fmt.Errorf("--data %s: no cropkit data directory there (start `cropkit serve --data %s` once to create it)", *dataDir, *dataDir)
	}
	if err != nil {
		return err
	}
	defer core.Close()
	var (
		errs  []error
		total archive.IngestResult
	)
	start := time.Now()
	for _, src := range scenes {
		sceneStart := time.Now()
		bar := newProgress(stderr, "ingest "+src, 0)
		opts.Progress = func(done, n int) {
			if bar.total != n {
				bar.Finish()
				bar = newProgress(stderr, "ingest "+src, n)
			}
			bar.Set(done)
		}
		res, err := core.Ingest(ctx, src, opts)
		bar.Finish()
		fmt.Fprintf(stdout, "%s %s: %d fields, %d usable, %d unusable, %d outside, %d skipped, %d failed (%s)\n",
			res.Date, src, res.Fields, res.Usable, res.Unusable, res.Outside, res.Skipped, res.Failed, time.Since(sceneStart).Round(time.Millisecond))
		total.Fields += res.Fields
		total.Usable += res.Usable
		total.Unusable += res.Unusable
		total.Skipped += res.Skipped + res.Outside
		total.Failed += res.Failed
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", src, err))
		}
	}
	fmt.Fprintf(stdout, "ingested %d scene(s): %d field images, %d usable products, %d unusable, %d skipped, %d failed in %s\n",
		len(scenes)-len(errs), total.Fields, total.Usable, total.Unusable, total.Skipped, total.Failed, time.Since(start).Round(time.Millisecond))
	return errors.Join(errs...)
}
