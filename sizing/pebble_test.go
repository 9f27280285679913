package sizing

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/engine/heapbackend"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/engine/state/statetest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
)

// TestPebbleMeasurementIsSane loads savepoint states into the real Pebble
// backend and checks that the bytes per entry on disk are within a sane
// band of the serialized bytes: random values do not compress, and Pebble
// adds a sequence number and block lengths per entry but shares key
// prefixes. A sample of the state measures about what the whole does.
func TestPebbleMeasurementIsSane(t *testing.T) {
	const maxP = 128
	rng := rand.New(rand.NewPCG(1, 2))
	b, err := heapbackend.New(heapbackend.Options{MaxParallelism: maxP, KeyGroups: keygroup.All(maxP)})
	must(t, err)
	defer b.Close()
	valueD := state.NewValue("payload", serializers.Bytes())
	value, err := state.GetValue(b, nil, valueD)
	must(t, err)
	mapD := state.NewMap("counts", serializers.String(), serializers.Int64())
	counts, err := state.GetMap(b, nil, mapD)
	must(t, err)
	tinyD := state.NewValue("tiny", serializers.Int64())
	tiny, err := state.GetValue(b, nil, tinyD)
	must(t, err)
	for i := range 5000 {
		must(t, b.SetCurrentKey(fmt.Appendf(nil, "user-%06d", i)))
		v := make([]byte, 40)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		must(t, value.Update(v))
		if i < 400 {
			for j := range 10 {
				must(t, counts.Put(fmt.Sprintf("category-%02d", j), rng.Int64()))
			}
		}
		if i == 0 {
			must(t, tiny.Update(42))
		}
	}
	op := statetest.NewOperator("op", 1, maxP, serializers.String(), []*state.Spec{valueD.Spec(), mapD.Spec(), tinyD.Spec()}, nil)
	dir := filepath.Join(t.TempDir(), "sp")
	r := statetest.WriteSavepoint(t, dir, statetest.NewMetadata(op, 0), 0, b)

	whole, err := MeasureSavepoint(context.Background(), r, dir, MeasureOptions{})
	must(t, err)
	sampled, err := MeasureSavepoint(context.Background(), r, dir, MeasureOptions{SampleBytes: 64 << 10})
	must(t, err)
	for _, name := range []string{"payload", "counts"} {
		st, sa := stateNamed(t, whole, name), stateNamed(t, sampled, name)
		serialized := st.PerEntry.Total
		onDisk := st.PebblePerByte * serialized
		t.Logf("%s: %.1f B per entry serialized, %.1f on Pebble; a sample of %d of %d key groups measures %.1f",
			name, serialized, onDisk, sa.Sample.KeyGroups, sa.Sample.WithData, sa.PebblePerByte*sa.PerEntry.Total)
		if onDisk < 0.5*serialized || onDisk > 2*serialized {
			t.Errorf("%s: %.1f B per entry on Pebble is outside half to twice the %.1f serialized", name, onDisk, serialized)
		}
		if sa.Sample.Complete() {
			t.Errorf("%s: a 64 KiB sample read the whole state", name)
		}
		if ratio := sa.PebblePerByte / st.PebblePerByte; ratio < 0.8 || ratio > 1.25 {
			t.Errorf("%s: the sample measures %.2f times what the whole state does", name, ratio)
		}
	}
	// A state of one entry is measured without the sstable's fixed
	// overhead, which would otherwise be a kilobyte per entry.
	if st := stateNamed(t, whole, "tiny"); st.PebblePerByte*st.PerEntry.Total > 100 {
		t.Errorf("one int64 entry measures %.0f B on Pebble", st.PebblePerByte*st.PerEntry.Total)
	}
}

// A sample loaded in parts, each into a database of its own, measures what
// it measures in one database: tables only add up.
func TestPebbleParts(t *testing.T) {
	const maxP = 64
	b, err := heapbackend.New(heapbackend.Options{MaxParallelism: maxP, KeyGroups: keygroup.All(maxP)})
	must(t, err)
	defer b.Close()
	d := state.NewMap("counts", serializers.String(), serializers.Int64())
	m, err := state.GetMap(b, nil, d)
	must(t, err)
	for i := range 4000 {
		must(t, b.SetCurrentKey(fmt.Appendf(nil, "user-%06d", i)))
		for j := range 5 {
			must(t, m.Put(fmt.Sprintf("category-%02d", j), int64(i*j)))
		}
	}
	op := statetest.NewOperator("op", 1, maxP, serializers.String(), []*state.Spec{d.Spec()}, nil)
	dir := filepath.Join(t.TempDir(), "sp")
	r := statetest.WriteSavepoint(t, dir, statetest.NewMetadata(op, 0), 0, b)
	ref := r.Metadata().Refs(0)[0]
	segs, err := r.Segments(context.Background(), ref, keygroup.All(maxP))
	must(t, err)

	parts := cutParts(segs, 16<<10)
	if len(parts) < 4 || parts[0].Start != 0 || parts[len(parts)-1].End != segs[len(segs)-1].KeyGroup {
		t.Fatalf("parts %v do not run from key group 0 to %d in several parts", parts, segs[len(segs)-1].KeyGroup)
	}
	for i := 1; i < len(parts); i++ {
		if parts[i].Start != parts[i-1].End+1 {
			t.Fatalf("parts %v leave a gap or overlap", parts)
		}
	}
	measure := func(part int64) float64 {
		pm := &pebbleMeter{tempDir: t.TempDir(), part: part}
		size, err := pm.measure(context.Background(), r, ref, segs)
		must(t, err)
		return size
	}
	one, several := measure(1<<30), measure(16<<10)
	t.Logf("one database: %.0f B; %d databases: %.0f B", one, len(parts), several)
	if ratio := several / one; ratio < 0.98 || ratio > 1.02 {
		t.Errorf("the sample measures %.0f B in %d parts against %.0f B in one", several, len(parts), one)
	}
}

// The sstables' overhead is calibrated once for every state: the state
// that asks first may be cancelled meanwhile (another state failed), and
// the states after it still get the calibration, not its cancellation.
func TestCalibrationOutlivesTheFirstAsker(t *testing.T) {
	m := newPebbleMeter(t.TempDir(), 0)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	first, err1 := m.fileOverhead(cancelled)
	second, err2 := m.fileOverhead(context.Background())
	if err1 != nil || err2 != nil || first <= 0 || second != first {
		t.Fatalf("calibrated %v (%v) for a cancelled state, then %v (%v), want the same positive overhead and no error", first, err1, second, err2)
	}
}
