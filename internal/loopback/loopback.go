// Package loopback guards nslab's HTTP servers (the live page, the
// metrics, a coordinator's metrics of a lab over several hosts) against
// DNS rebinding: a server on loopback answers loopback names only.
package loopback

import (
	"fmt"
	"net"
	"net/http"
)

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
