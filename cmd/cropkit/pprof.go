package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// startPprof serves net/http/pprof's profiles on addr, which must be a
// loopback address (profiles expose the process's internals: never on a
// public interface), until ctx ends. It returns the address it listens on.
func startPprof(ctx context.Context, addr string, logger *slog.Logger) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--pprof %q: %w", addr, err)
	}
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil || len(ips) == 0 {
		return "", fmt.Errorf("--pprof %q: resolve %s: %v", addr, host, err)
	}
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return "", fmt.Errorf("--pprof %q: not a loopback address (profiles are served on loopback only)", addr)
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ips[0].IP.String(), mustPort(addr)))
	if err != nil {
		return "", fmt.Errorf("--pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && err != http.ErrServerClosed {
			logger.Warn("pprof server", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	return ln.Addr().String(), nil
}

func mustPort(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}
