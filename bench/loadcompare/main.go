// Command loadcompare measures the read path of `cropkit serve` against the
// HTTP stack's own limit, in one run on one machine:
//
//	go run ./bench/loadcompare [-cropkit BIN] [-clients 50] [-requests 20000] [-reps 3]
//
// It starts `cropkit serve --demo` on a loopback port (its own data
// directory, logs to a file), downloads POST /download/ndvi/json of each
// demo field once (the 16 documents), and starts a reference server: this
// same program re-executed as a minimal net/http handler answering those 16
// documents from memory (same Content-Type, Content-Disposition and
// X-Image-Date headers, a bearer token required). Then, alternating between
// the two servers for -reps rounds, -clients concurrent keep-alive clients
// send -requests POST /download/ndvi/json requests in total, spread over the
// 16 fields. It prints each round's throughput, latency percentiles and
// the server process's CPU time per request (Linux, from /proc: other work
// on a shared machine disturbs it far less than throughput), the medians,
// and the ratios cropkit/reference. Everything is bounded: each
// round by -timeout, the whole run by the processes it started.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-serve-reference" {
		if err := serveReference(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "reference:", err)
			os.Exit(1)
		}
		return
	}
	bin := flag.String("cropkit", "", "cropkit binary (default: go build ./cmd/cropkit into a temporary directory)")
	clients := flag.Int("clients", 50, "concurrent clients")
	requests := flag.Int("requests", 20000, "requests per round")
	reps := flag.Int("reps", 3, "rounds per server (alternating)")
	timeout := flag.Duration("timeout", 2*time.Minute, "limit of one round")
	keep := flag.Bool("keep", false, "keep the temporary directory (server log, data)")
	extra := flag.String("serve-args", "", "more arguments of cropkit serve, space-separated (e.g. \"--pprof 127.0.0.1:6060\")")
	flag.Parse()
	if err := run(*bin, *clients, *requests, *reps, *timeout, *keep, strings.Fields(*extra)); err != nil {
		fmt.Fprintln(os.Stderr, "loadcompare:", err)
		os.Exit(1)
	}
}

// doc is one field's document as cropkit answered it.
type doc struct {
	Field       string            `json:"field"`
	Headers     map[string]string `json:"headers"`
	Body        []byte            `json:"body"`
	ContentType string            `json:"content_type"`
}

// result is one round's measurement.
type result struct {
	rps           float64
	p50, p99, max time.Duration
	// cpu is the server process's CPU time per request (0: unknown):
	// other work on the machine disturbs it far less than throughput.
	cpu time.Duration
}

func run(bin string, clients, requests, reps int, timeout time.Duration, keep bool, extra []string) error {
	tmp, err := os.MkdirTemp("", "loadcompare-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintln(os.Stderr, "temporary directory:", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	if bin == "" {
		bin = filepath.Join(tmp, "cropkit")
		build := exec.Command("go", "build", "-o", bin, "./cmd/cropkit")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build cropkit (run from the module root or give -cropkit): %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(2*reps+2)*timeout)
	defer cancel()

	// cropkit serve --demo
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(tmp, "serve.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	args := append([]string{"serve", "--demo", "--addr", addr, "--data", filepath.Join(tmp, "data")}, extra...)
	serve := exec.CommandContext(ctx, bin, args...)
	stdout, err := serve.StdoutPipe()
	if err != nil {
		return err
	}
	serve.Stderr = logFile
	if err := serve.Start(); err != nil {
		return err
	}
	defer stop(serve)
	token, err := waitDemo(stdout, 3*time.Minute)
	if err != nil {
		return fmt.Errorf("serve --demo: %w (log: %s)", err, logFile.Name())
	}
	go io.Copy(io.Discard, stdout)
	base := "http://" + addr
	docs, err := fetchDocs(ctx, base, token)
	if err != nil {
		return err
	}

	// the reference: this program, serving docs from memory
	docsFile := filepath.Join(tmp, "docs.json")
	b, _ := json.Marshal(docs)
	if err := os.WriteFile(docsFile, b, 0o600); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ref := exec.CommandContext(ctx, self, "-serve-reference", docsFile)
	refOut, err := ref.StdoutPipe()
	if err != nil {
		return err
	}
	ref.Stderr = os.Stderr
	if err := ref.Start(); err != nil {
		return err
	}
	defer stop(ref)
	line, err := bufio.NewReader(refOut).ReadString('\n')
	if err != nil {
		return fmt.Errorf("reference did not start: %w", err)
	}
	refBase := "http://" + strings.TrimSpace(line)

	fmt.Printf("load: POST /download/ndvi/json, %d fields, %d clients, %d requests per round, %d rounds each, loopback\n",
		len(docs), clients, requests, reps)
	var ours, theirs []result
	for i := range reps {
		for _, side := range []struct {
			name, base string
			pid        int
			out        *[]result
		}{{"reference", refBase, ref.Process.Pid, &theirs}, {"cropkit", base, serve.Process.Pid, &ours}} {
			rctx, rcancel := context.WithTimeout(ctx, timeout)
			cpu0, cpuErr := processCPU(side.pid)
			r, err := load(rctx, side.base, token, docs, clients, requests)
			rcancel()
			if err != nil {
				return fmt.Errorf("%s round %d: %w", side.name, i+1, err)
			}
			if cpu1, err := processCPU(side.pid); err == nil && cpuErr == nil {
				r.cpu = (cpu1 - cpu0) / time.Duration(requests)
			}
			*side.out = append(*side.out, r)
			fmt.Printf("round %d %-9s %8.0f req/s  p50 %-9s p99 %-9s max %-9s cpu %s/req\n", i+1, side.name, r.rps,
				r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.max.Round(time.Microsecond), r.cpu.Round(100*time.Nanosecond))
		}
	}
	o, t := medians(ours), medians(theirs)
	fmt.Printf("median reference %8.0f req/s  p99 %-9s cpu %s/req\n", t.rps, t.p99.Round(time.Microsecond), t.cpu.Round(100*time.Nanosecond))
	fmt.Printf("median cropkit   %8.0f req/s  p99 %-9s cpu %s/req\n", o.rps, o.p99.Round(time.Microsecond), o.cpu.Round(100*time.Nanosecond))
	fmt.Printf("ratio cropkit/reference: throughput %.2fx, p99 %.2fx", o.rps/t.rps, float64(o.p99)/float64(t.p99))
	if o.cpu > 0 && t.cpu > 0 {
		fmt.Printf(", server CPU per request %.2fx", float64(o.cpu)/float64(t.cpu))
	}
	fmt.Println()
	return nil
}

// processCPU is the user+system CPU time process pid has used so far, from
// /proc (Linux; an error elsewhere).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which may hold spaces, in parentheses):
	// state is field 3, utime and stime fields 14 and 15, in clock ticks.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

func medians(rs []result) result {
	med := func(f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return result{
		rps: med(func(r result) float64 { return r.rps }),
		p50: time.Duration(med(func(r result) float64 { return float64(r.p50) })),
		p99: time.Duration(med(func(r result) float64 { return float64(r.p99) })),
		max: time.Duration(med(func(r result) float64 { return float64(r.max) })),
		cpu: time.Duration(med(func(r result) float64 { return float64(r.cpu) })),
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func stop(c *exec.Cmd) {
	if c.Process != nil {
		c.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			c.Process.Kill()
		}
	}
}

var (
	tokenLine  = regexp.MustCompile(`(?:ADMIN TOKEN|demo: new admin token): (\S+)`)
	demoURL    = regexp.MustCompile(`field_name=([^&]+)&token=`)
	listenLine = regexp.MustCompile(`listening on http://`)
)

// waitDemo reads serve's stdout until it listens; it returns the admin
// token (the demo fields are listed from the server afterwards).
func waitDemo(stdout io.Reader, limit time.Duration) (string, error) {
	type out struct {
		token string
		err   error
	}
	done := make(chan out, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		token, listening := "", false
		for sc.Scan() {
			line := sc.Text()
			if m := tokenLine.FindStringSubmatch(line); m != nil {
				token = m[1]
			}
			if listenLine.MatchString(line) {
				listening = true
			}
			if listening && demoURL.MatchString(line) {
				done <- out{token: token}
				return
			}
		}
		done <- out{err: errors.New("exited before listening")}
	}()
	select {
	case o := <-done:
		return o.token, o.err
	case <-time.After(limit):
		return "", errors.New("not listening after " + limit.String())
	}
}

// fetchDocs lists the demo fields and downloads each one's ndvi document.
func fetchDocs(ctx context.Context, base, token string) ([]doc, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/fields/list", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		return nil, fmt.Errorf("fields/list: %d %v %s", resp.StatusCode, err, body)
	}
	names := regexp.MustCompile(`"(?:field_name|name)"\s*:\s*"([^"]+)"`).FindAllSubmatch(body, -1)
	var docs []doc
	seen := map[string]bool{}
	for _, m := range names {
		name := string(m[1])
		if seen[name] {
			continue
		}
		seen[name] = true
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/download/ndvi/json?field_name="+name, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != 200 {
			continue // no usable image of this field
		}
		docs = append(docs, doc{Field: name, Body: b, ContentType: resp.Header.Get("Content-Type"), Headers: map[string]string{
			"Content-Disposition": resp.Header.Get("Content-Disposition"),
			"X-Image-Date":        resp.Header.Get("X-Image-Date"),
		}})
	}
	if len(docs) == 0 {
		return nil, errors.New("no demo document")
	}
	return docs, nil
}

// serveReference serves the documents of file from memory on a loopback
// port and prints the address.
func serveReference(file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var docs []doc
	if err := json.Unmarshal(b, &docs); err != nil {
		return err
	}
	byName := map[string]doc{}
	for _, d := range docs {
		byName[d.Field] = d
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusForbidden)
			return
		}
		d, ok := byName[r.URL.Query().Get("field_name")]
		if !ok {
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
			return
		}
		hd := w.Header()
		hd.Set("Content-Type", d.ContentType)
		for k, v := range d.Headers {
			hd.Set(k, v)
		}
		w.Write(d.Body)
	})
	return (&http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
}

// load sends requests POSTs from clients concurrent keep-alive clients.
func load(ctx context.Context, base, token string, docs []doc, clients, requests int) (result, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	urls := make([]string, len(docs))
	for i, d := range docs {
		urls[i] = base + "/download/ndvi/json?field_name=" + d.Field
	}
	lat := make([]time.Duration, requests)
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= requests || ctx.Err() != nil {
					return
				}
				d := docs[i%len(docs)]
				req, _ := http.NewRequestWithContext(ctx, "POST", urls[i%len(urls)], nil)
				req.Header.Set("Authorization", "Bearer "+token)
				t0 := time.Now()
				resp, err := hc.Do(req)
				if err == nil {
					var n int64
					n, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && (resp.StatusCode != 200 || n != int64(len(d.Body))) {
						err = fmt.Errorf("%s: status %d, %d bytes (want 200, %d)", d.Field, resp.StatusCode, n, len(d.Body))
					}
				}
				lat[i] = time.Since(t0)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return result{}, firstErr
	}
	if err := ctx.Err(); err != nil {
		return result{}, err
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	return result{rps: float64(requests) / elapsed.Seconds(), p50: q(0.5), p99: q(0.99), max: lat[len(lat)-1]}, nil
}
