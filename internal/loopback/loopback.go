// Package loopback serves nslab's HTTP servers (the live page, the
// metrics, a coordinator's metrics of a lab over several hosts), guarded
// against DNS rebinding: a server on loopback answers loopback names only.
package loopback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Serve serves h (behind SameHost) on addr until ctx ends (Ctrl-C,
// SIGTERM), then shuts down: connections (a page's event stream too) are
// closed. It says "nslab: serving what" on w once it listens.
func Serve(ctx context.Context, addr string, h http.Handler, w io.Writer, what string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: SameHost(addr, h), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	fmt.Fprintf(w, "nslab: serving %s\n", what)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}

// SameHost refuses a request whose Host header names another host than
// the address served, when that is loopback: a page of another site that
// a browser on this machine loads could otherwise read what is served
// through a name that resolves to 127.0.0.1 (DNS rebinding). A server on
// a non-loopback address, named by --listen, answers any name.
func SameHost(addr string, h http.Handler) http.Handler {
	if host, _, err := net.SplitHostPort(addr); err != nil || !loopback(host) {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.Host
		if hn, _, err := net.SplitHostPort(r.Host); err == nil {
			name = hn
		}
		if !loopback(name) {
			http.Error(w, fmt.Sprintf("this server answers %s on loopback only, not %s", addr, r.Host), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// loopback reports whether host is localhost or a loopback address.
func loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}
