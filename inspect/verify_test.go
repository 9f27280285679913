package inspect

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/savepoint"
)

// TestValidateAgreesWithDecodeOnSavepoints: verify --deep validates entries
// instead of decoding them, so over every state of the checked-in
// savepoints of both format versions, Validate must accept each entry as
// Decode does, and, for entries with a part mutated (a byte changed, cut
// short, one appended), fail exactly where Decode fails with its error.
func TestValidateAgreesWithDecodeOnSavepoints(t *testing.T) {
	dirs, err := filepath.Glob("../testdata/savepoints/v*/*")
	if err != nil || len(dirs) < 10 {
		t.Fatalf("checked-in savepoints: %v, %d found", err, len(dirs))
	}
	rng := rand.New(rand.NewPCG(21, 22))
	var entries, refused, accepted int
	for _, dir := range dirs {
		src := sptest.Open(t, dir)
		m := src.Metadata()
		decoders, err := restoreDecoders(m)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for ref, dec := range decoders {
			for i, e := range sptest.EntriesOf(t, src, ref) {
				entries++
				if !sameEntryVerdict(t, dec, &e) {
					t.Fatalf("%s %s: entry %d does not decode", dir, m.Describe(ref), i)
				}
				if i >= 50 {
					continue
				}
				for range 20 {
					bad := mutate(rng, e)
					if sameEntryVerdict(t, dec, &bad) {
						accepted++
					} else {
						refused++
					}
				}
			}
		}
	}
	if entries < 1000 || refused < 1000 || accepted < 100 {
		t.Errorf("%d entries, %d mutations refused, %d accepted: too few to compare", entries, refused, accepted)
	}
	t.Logf("%d entries; of their mutations %d refused, %d accepted, alike", entries, refused, accepted)
}

func sameEntryVerdict(t *testing.T, dec *savepoint.Decoder, e *savepoint.Entry) bool {
	t.Helper()
	_, decErr := dec.Decode(e)
	valErr := dec.Validate(e)
	switch {
	case decErr == nil && valErr == nil:
		return true
	case decErr == nil || valErr == nil || decErr.Error() != valErr.Error():
		t.Fatalf("entry %x/%x/%x/%x: Decode says %v, Validate %v", e.Key, e.Namespace, e.MapKey, e.Value, decErr, valErr)
	}
	return false
}

// mutate changes one part of e: a byte, its length, or a byte more.
func mutate(rng *rand.Rand, e savepoint.Entry) savepoint.Entry {
	parts := []*[]byte{&e.Key, &e.Namespace, &e.MapKey, &e.Value}
	p := parts[rng.IntN(len(parts))]
	b := bytes.Clone(*p)
	switch r := rng.IntN(4); {
	case r == 0 && len(b) > 0:
		b = b[:rng.IntN(len(b))]
	case r == 1:
		b = append(b, byte(rng.Uint32()))
	case len(b) > 0:
		b[rng.IntN(len(b))] = byte(rng.Uint32())
	}
	*p = b
	return e
}
