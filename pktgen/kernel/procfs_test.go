package kernel

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDirFilesWriteOneLine: each command is one write ending in a newline,
// as pgctrl needs (it drops the last byte of a write).
func TestDirFilesWriteOneLine(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "pgctrl"), nil, 0o644)
	d := dirFiles{dir: dir}
	if err := d.write("pgctrl", "reset"); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.read("pgctrl"); got != "reset\n" {
		t.Errorf("wrote %q", got)
	}
	if err := d.write("missing", "x"); !os.IsNotExist(err) {
		t.Errorf("write to a missing file: %v", err)
	}
	names, err := d.list()
	if err != nil || len(names) != 1 {
		t.Errorf("list: %v %v", names, err)
	}
}
