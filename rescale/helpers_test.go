package rescale_test

import (
	"testing"

	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// counts sums entries per "uid/name" from reading the data, timers included.
func counts(t testing.TB, r *snapshotfmt.Reader) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for k, v := range sptest.Contents(t, r) {
		out[k] = uint64(len(v))
	}
	return out
}
