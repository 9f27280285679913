package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/ttl"
)

// The job of mkcheckpoint: checkpointKeys records, key k-000 first, dated
// a second apart from checkpointT0, each written once into a TTL value
// state at the processing time the watermark before it sets.
const (
	checkpointKeys = 200
	checkpointT0   = 1_700_000_000_000
)

var checkpointValue = state.NewValue("value", serializers.Int64(), state.WithTTL(ttl.New(time.Hour)))

type checkpointRecord struct {
	key       string
	heartbeat bool
}

// checkpointSource emits the records, then heartbeats until done says the
// job has processed them all and a checkpoint started after that has
// completed, so that the last checkpoint holds every record.
type checkpointSource struct {
	root      string
	processed *atomic.Int64
}

func (s *checkpointSource) Splits() int { return 1 }

func (s *checkpointSource) Open(ctx context.Context, _ int, offset int64) (engine.SplitReader[checkpointRecord], error) {
	return &checkpointReader{s: s, i: int(offset), after: -1}, nil
}

type checkpointReader struct {
	s *checkpointSource
	i int
	// after is the first checkpoint id that started once every record was
	// processed, or -1 while some are not.
	after int
	// beats counts the heartbeats: each is a millisecond later than the
	// one before, for the watermark to move on, which a checkpoint needs
	// to complete under DeterministicTime.
	beats int64
}

func (r *checkpointReader) Next(ctx context.Context) (checkpointRecord, int64, bool, error) {
	last := int64(checkpointT0 + (checkpointKeys-1)*1000)
	if r.i < checkpointKeys {
		r.i++
		return checkpointRecord{key: fmt.Sprintf("k-%03d", r.i-1)}, checkpointT0 + int64(r.i-1)*1000, true, nil
	}
	newest, err := newestCheckpoint(r.s.root)
	if err != nil {
		return checkpointRecord{}, 0, false, err
	}
	switch {
	case r.after < 0 && r.s.processed.Load() == checkpointKeys:
		// One checkpoint may be in flight, started before the last record
		// was processed; the one after it started later.
		r.after = newest + 2
	case r.after >= 0 && newest >= r.after:
		return checkpointRecord{}, 0, false, nil
	}
	time.Sleep(time.Millisecond)
	r.beats++
	return checkpointRecord{heartbeat: true}, last + 1000 + r.beats, true, nil
}

// newestCheckpoint returns the highest id of a completed checkpoint under
// root, or 0.
func newestCheckpoint(root string) (int, error) {
	entries, err := os.ReadDir(root)
	if err != nil && !os.IsNotExist(err) {
		return 0, err
	}
	newest := 0
	for _, e := range entries {
		if id, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "chk-")); err == nil && strings.HasPrefix(e.Name(), "chk-") {
			newest = max(newest, id)
		}
	}
	return newest, nil
}

type checkpointWriter struct {
	v         state.ValueState[int64]
	processed *atomic.Int64
}

func (w *checkpointWriter) Open(ctx *engine.OpenContext) (err error) {
	w.v, err = engine.GetValue(ctx, checkpointValue)
	return err
}

func (w *checkpointWriter) ProcessElement(_ *engine.Context[string, struct{}], r checkpointRecord) error {
	if r.heartbeat {
		return nil
	}
	n, _ := strconv.Atoi(strings.TrimPrefix(r.key, "k-"))
	err := w.v.Update(int64(n))
	w.processed.Add(1)
	return err
}

func (w *checkpointWriter) OnTimer(*engine.Context[string, struct{}], engine.TimerInfo) error {
	return nil
}

// cmdMkcheckpoint runs the job of checkpointSource on Pebble at
// parallelism 2 with periodic, incremental checkpoints under ROOT, and
// links ROOT/last to its last checkpoint: mkcheckpoint ROOT.
func cmdMkcheckpoint(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mkcheckpoint ROOT")
	}
	root := ts.MkAbs(args[0])
	last, err := makeCheckpoint(root, ts.MkAbs(args[0]+"-work"))
	ts.Check(err)
	ts.Check(os.Symlink(filepath.Base(last), filepath.Join(root, "last")))
}

// makeCheckpoint runs the job of checkpointSource as mkcheckpoint does,
// with work as its work directory, and returns its last checkpoint.
func makeCheckpoint(root, work string) (string, error) {
	processed := new(atomic.Int64)
	j := engine.NewJob("checkpointed")
	records := engine.FromSource[checkpointRecord](j, &checkpointSource{root: root, processed: processed}, engine.Watermarks{Every: 1}, engine.UID("records"))
	keyed := engine.KeyBy(records, func(r checkpointRecord) string { return r.key }, serializers.String())
	engine.Process(keyed, func() engine.KeyedProcessFunction[string, checkpointRecord, struct{}] {
		return &checkpointWriter{processed: processed}
	}, engine.UID("counter"), engine.WithState(checkpointValue), engine.Parallelism(2), engine.MaxParallelism(128))
	res, err := engine.Run(context.Background(), j, engine.RunOptions{
		Backend: engine.Pebble, WorkDir: work, CheckpointDir: root,
		CheckpointInterval: 2 * time.Millisecond, RetainCheckpoints: 1000, ProcessingTime: engine.DeterministicTime,
	})
	if err != nil {
		return "", err
	}
	if res.LastCheckpoint == "" {
		return "", fmt.Errorf("mkcheckpoint: the job completed no checkpoint")
	}
	return res.LastCheckpoint, nil
}

// unionSchema and unionRecordSchema are the values of mkunions.
const (
	unionSchema       = `["float","long"]`
	unionRecordSchema = `{"type":"record","name":"Reading","namespace":"demo","fields":[{"name":"note","type":["null","string"]},` +
		`{"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"raw","type":"bytes"},` +
		`{"name":"reading","type":["int","string",{"type":"record","name":"Pair","fields":[{"name":"x","type":"int"}]}]}]}`
)

// cmdMkunions writes a savepoint whose operator "u" keeps, per string key,
// a value of ["float", "long"] in state num and a record with unions in
// state rec: a: float 42, b: long 42: mkunions DIR.
func cmdMkunions(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mkunions DIR")
	}
	void := serializers.Snapshot{Kind: serializers.KindVoid}
	num := serializers.Snapshot{Kind: serializers.KindAvro, Schema: unionSchema}
	rec := serializers.Snapshot{Kind: serializers.KindAvro, Schema: unionRecordSchema}
	meta := &savepoint.Metadata{ID: 1, CreatedAt: demoNow, Operators: []savepoint.Operator{{
		UID: "u", Name: "Unions", Parallelism: 1, MaxParallelism: 128, KeyHash: keygroup.Murmur3,
		Key: serializers.Snapshot{Kind: serializers.KindString},
		States: []savepoint.KeyedState{
			{Name: "num", Kind: savepoint.Value, Namespace: void, Value: num},
			{Name: "rec", Kind: savepoint.Value, Namespace: void, Value: rec},
		},
	}}}
	enc := func(snap serializers.Snapshot, v any) []byte {
		ser, err := serializers.Restore(snap)
		ts.Check(err)
		b, err := ser.AppendAny(nil, v)
		ts.Check(err)
		return b
	}
	entries := map[savepoint.StateRef][]savepoint.Entry{
		{State: 0}: {
			{Key: []byte("a"), Value: enc(num, map[string]any{"float": float32(42)})},
			{Key: []byte("b"), Value: enc(num, map[string]any{"long": int64(42)})},
		},
		{State: 1}: {
			{Key: []byte("a"), Value: enc(rec, map[string]any{"note": nil, "at": time.UnixMilli(demoNow), "raw": []byte{0xca, 0xfe},
				"reading": map[string]any{"demo.Pair": map[string]any{"x": 3}}})},
			{Key: []byte("b"), Value: enc(rec, map[string]any{"note": "hand", "at": time.UnixMilli(demoNow + 1500), "raw": []byte{},
				"reading": map[string]any{"string": "high"}})},
		},
	}
	ts.Check(sptest.Write(ts.MkAbs(args[0]), meta, entries, snapshotfmt.Options{}))
}
