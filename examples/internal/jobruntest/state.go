package jobruntest

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// SourceRead is how far the source uid had read when m was taken, summed
// over its splits: the offsets of its split positions, decoded with the
// serializer m itself records.
func SourceRead(t testing.TB, m *savepoint.Metadata, uid string) int64 {
	t.Helper()
	op, ok := m.Operator(uid)
	if !ok {
		t.Fatalf("no operator %s", uid)
	}
	var read int64
	for _, s := range op.OperatorStates {
		ser, err := serializers.Restore(s.Element)
		if err != nil {
			t.Fatal(err)
		}
		for _, sub := range s.Subtasks {
			for _, e := range sub {
				v, err := ser.DecodeAny(e)
				if err != nil {
					t.Fatal(err)
				}
				read += v.(map[string]any)["offset"].(int64)
			}
		}
	}
	return read
}

// CommittedLines returns the lines of every committed part file of a file
// sink under dir, sorted, and fails on a file left uncommitted.
func CommittedLines(t testing.TB, dir string) []string {
	t.Helper()
	var lines []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "part-") {
			t.Errorf("%s: %s left uncommitted", dir, e.Name())
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(lines)
	return lines
}
