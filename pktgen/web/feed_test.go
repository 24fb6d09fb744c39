package web

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/topology/spec"
)

// TestFed: a page fed views (a lab over hosts, as its coordinator feeds
// it) hands each view line to a page, a line that does not parse as an
// error, draws the whole lab, says it samples, and serves no /metrics.
func TestFed(t *testing.T) {
	l, err := spec.Parse("f.yaml", []byte("name: fed1\nnodes:\n  client: {}\n  server: {}\nlinks:\n  - endpoints: [client:eth0, server:eth0]\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := newFed(l, 200*time.Millisecond)
	page := make(chan []byte, 4)
	s.clients[page] = true
	s.Feed(strings.NewReader(`{"type":"view","view":{"lab":"fed1","interval":0.2}}` + "\nnot json\n"))
	var m1, m2 Message
	json.Unmarshal(<-page, &m1)
	json.Unmarshal(<-page, &m2)
	if m1.Type != "view" || m1.View == nil || m1.View.Lab != "fed1" || m2.Type != "error" || !strings.Contains(m2.Error, "does not parse") {
		t.Errorf("sent %+v then %+v", m1, m2)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	res, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(body), "sampling every 200ms") || !strings.Contains(string(body), "server") {
		t.Errorf("the page:\n%s", body)
	}
	if res, err := http.Get(srv.URL + "/metrics"); err != nil || res.StatusCode != http.StatusNotFound {
		t.Errorf("a fed page's /metrics: %v %v", res.Status, err)
	}
}
