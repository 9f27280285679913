package engine

import (
	"context"
	"strings"
	"testing"
)

// A file sink asked to recover a transaction that is neither pending nor
// committed in its directory, as when a run restores with another output
// directory than the run that took the snapshot, says so rather than
// failing with a bare rename error.
func TestFileSinkRecoverElsewhere(t *testing.T) {
	s := NewFileSink(t.TempDir(), func(v int, _ int64) ([]byte, error) { return nil, nil })
	err := s.Recover(context.Background(), [][]byte{[]byte("00000-000000-000000")})
	if err == nil || !strings.Contains(err.Error(), "output directory of the run that took the snapshot") {
		t.Fatalf("Recover = %v; want an error saying where the transaction should be", err)
	}
}
