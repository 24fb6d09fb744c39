// Package labname gives throwaway labs names that collide with nothing:
// random lab names, and a lab file renamed with a matching namespace
// prefix. Tests and the benchmark programs use it; it imports no test
// machinery.
package labname

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// Random returns a random name of the form prefix + 6 hex digits, short
// enough for lab names (12) and, with a short node name, interface names
// (15).
func Random(prefix string) string {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return prefix + hex.EncodeToString(b)
}

// Rename gives a topology file another lab name and a namespace prefix of
// name + "-", so the lab never collides with anything else.
func Rename(data []byte, name string) []byte {
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "name:"):
			out = append(out, "name: "+name, "prefix: "+name+"-")
		case strings.HasPrefix(line, "prefix:"):
		default:
			out = append(out, line)
		}
	}
	return []byte(strings.Join(out, "\n"))
}
