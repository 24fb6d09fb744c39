package loopback

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestSameHost: on loopback, only loopback names are answered; on an
// address named by --listen, every name.
func TestSameHost(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})
	cases := []struct {
		listen, host string
		code         int
	}{
		{"127.0.0.1:8080", "127.0.0.1:8080", 200},
		{"127.0.0.1:8080", "localhost:8080", 200},
		{"127.0.0.1:8080", "[::1]:8080", 200},
		{"127.0.0.1:8080", "rebound.example:8080", 403},
		{"127.0.0.1:8080", "rebound.example", 403},
		{"localhost:8080", "attacker.example:8080", 403},
		{"0.0.0.0:8080", "lab-host.example:8080", 200},
		{"192.0.2.1:8080", "anything:8080", 200},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/", nil)
		req.Host = c.host
		SameHost(c.listen, ok).ServeHTTP(rec, req)
		if rec.Code != c.code {
			t.Errorf("listen %s, Host %s: %d, want %d", c.listen, c.host, rec.Code, c.code)
		}
	}
}
