// Command cropkit runs the cropkit server and its batch tools:
//
//	cropkit serve   --addr HOST:PORT --data DIR [--demo]
//	cropkit ingest  --data DIR SCENE...
//	cropkit index   --scene DIR --fields FILE.geojson --index ndvi,... --out OUTDIR
//	cropkit zones   --scene DIR --fields FILE.geojson --field NAME --index ndvi --zones K --out FILE
//	cropkit timeseries --scene DIR ... --fields FILE.geojson --index ndvi --from YYYY-MM-DD --to YYYY-MM-DD --out OUTDIR
//	cropkit worker  --db URL --blobs URL --catalog URL
//	cropkit user add NAME --data DIR
//	cropkit token create|list|revoke NAME --data DIR
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// command is one subcommand: it parses args (without the subcommand name)
// and writes results to stdout, diagnostics to stderr.
type command func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error

func commands() map[string]command {
	return map[string]command{
		"serve":  runServe,
		"ingest": runIngest,
		"index":  runIndex,
		"zones":  runZones,
		"user":   runUser,
		"token":  runToken,
		"watch":  runWatch,
		"worker": runWorker,

		"boundaries": runBoundaries,
		"timeseries": runTimeseries,
		"weather":    runWeather,
	}
}

const usage = `usage: cropkit <command> [flags]

commands:
  serve    run the HTTP server (embedded SQLite under --data)
  ingest   ingest scenes into a data directory
  index    compute per-field index statistics and PNGs from local scenes
  zones    compute management zones for one field from local scenes
  boundaries  detect field boundaries from a season of scenes
  user     manage accounts (user add NAME)
  token    manage tokens (token create|list|revoke NAME)
  timeseries  daily series per field with an 80 % interval from local scenes of any dates
  watch    monitor a STAC catalogue for new imagery of the fields, without the HTTP API
  weather  growing degree days, rain, frost and heat days of a date range (CSV or Open-Meteo-compatible API)
  worker   run the job queue (polls, backfills, ingestions, webhooks) on a shared --db/--blobs, without the HTTP API

Run 'cropkit <command> -h' for the command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	stdout, stderr = serialized(stdout), serialized(stderr)
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "cropkit: unknown command %q\n%s", args[0], usage)
		return 2
	}
	if err := cmd(ctx, args[1:], stdin, stdout, stderr); errors.Is(err, flag.ErrHelp) {
		return 0 // -h: the flag set printed its usage
	} else if err != nil {
		fmt.Fprintf(stderr, "cropkit %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// lockedWriter serializes writes: a command's logger, its workers and its
// own messages share stdout and stderr from several goroutines, and a
// writer such as a test's strings.Builder (or a pipe wrapped by a caller)
// is not safe for that.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// serialized returns w behind a lock, or w itself when it already is.
func serialized(w io.Writer) io.Writer {
	if _, ok := w.(*lockedWriter); ok {
		return w
	}
	return &lockedWriter{w: w}
}
