package filesource

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/serializers"
)

// event is a line of the test input, in JSON or CSV.
type event struct {
	File string `json:"file" csv:"file"`
	Seq  int    `json:"seq" csv:"seq"`
	Key  string `json:"key" csv:"key"`
	TS   int64  `json:"ts" csv:"ts"`
}

// writeInput writes JSON-lines and CSV files of several sizes (LF and
// CRLF, one ending without a line break, one empty) and returns the
// records they hold, as the job's sink formats them, and each key's count.
func writeInput(t *testing.T) (dir string, want []string, counts map[string]int) {
	t.Helper()
	dir = t.TempDir()
	counts = map[string]int{}
	files := []struct {
		name  string
		lines int
		eol   string
	}{
		{"a.jsonl", 3000, "\n"}, {"b.csv", 2500, "\r\n"}, {"c.jsonl", 0, "\n"}, {"d.jsonl", 1700, "\r\n"}, {"e.csv", 4100, "\n"}, {"f.jsonl", 900, "\n"},
	}
	for fi, f := range files {
		var b strings.Builder
		if strings.HasSuffix(f.name, ".csv") {
			b.WriteString("ts,key,seq,file" + f.eol)
		}
		for i := range f.lines {
			e := event{File: f.name, Seq: i, Key: fmt.Sprintf("k%d", (i*7+fi)%37), TS: int64(i * 10)}
			if strings.HasSuffix(f.name, ".csv") {
				fmt.Fprintf(&b, "%d,%s,%d,%s", e.TS, e.Key, e.Seq, e.File)
			} else {
				// The names vary in length, so that lines straddle the
				// split boundaries at every offset.
				fmt.Fprintf(&b, `{"file":%q,"seq":%d,"key":%q,"ts":%d,"pad":%q}`, e.File, e.Seq, e.Key, e.TS, strings.Repeat("x", i%13))
			}
			if i < f.lines-1 || f.name != "f.jsonl" {
				b.WriteString(f.eol)
			}
			want = append(want, e.File+"/"+strconv.Itoa(e.Seq))
			counts[e.Key]++
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	return dir, want, counts
}

// pacedSource reads some splits slower than others, and, while held, no
// further than held records over all its splits, as an input that has no
// more yet.
type pacedSource struct {
	*Source[event]
	read *atomic.Int64
	hold *atomic.Int64
}

func (s pacedSource) Open(ctx context.Context, split int, offset int64) (engine.SplitReader[event], error) {
	r, err := s.Source.Open(ctx, split, offset)
	if err != nil {
		return nil, err
	}
	return &pacedReader{reader: r.(*reader[event]), s: s, slow: split%3 == 0}, nil
}

type pacedReader struct {
	*reader[event]
	s    pacedSource
	slow bool
	n    int
}

func (r *pacedReader) Next(ctx context.Context) (event, int64, bool, error) {
	if h := r.s.hold.Load(); h > 0 && r.s.read.Load() >= h {
		return event{}, 0, false, engine.ErrNothingAvailable
	}
	e, ts, ok, err := r.reader.Next(ctx)
	if ok {
		r.s.read.Add(1)
		if r.n++; r.slow && r.n%50 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	return e, ts, ok, err
}

var seenDesc = state.NewValue("seen", serializers.Int64())

// countEvents counts the events of each key in keyed state and passes
// each on with its key's count; it fails once, when the job has
// processed failAt events.
type countEvents struct {
	engine.NoTimers[string, string]
	seen      state.ValueState[int64]
	processed *atomic.Int64
	failAt    int64
}

func (c *countEvents) Open(ctx *engine.OpenContext) (err error) {
	c.seen, err = engine.GetValue(ctx, seenDesc)
	return err
}

var errInjected = errors.New("injected failure")

func (c *countEvents) ProcessElement(ctx *engine.Context[string, string], e event) error {
	if c.processed.Add(1) == c.failAt {
		return errInjected
	}
	n, _, err := c.seen.Value()
	if err != nil {
		return err
	}
	if err := c.seen.Update(n + 1); err != nil {
		return err
	}
	return ctx.Emit(fmt.Sprintf("%s/%d %s %d", e.File, e.Seq, e.Key, n+1))
}

func fileJob(src engine.Source[event], p int, out string, processed *atomic.Int64, failAt int64) *engine.Job {
	j := engine.NewJob("file-count", engine.DefaultParallelism(p))
	// Held splits go idle, so that under DeterministicTime they do not
	// hold back the savepoint's barrier.
	events := engine.FromSource(j, src, engine.Watermarks{Every: 16, IdleTimeout: 20 * time.Millisecond}, engine.UID("files"))
	keyed := engine.KeyBy(events, func(e event) string { return e.Key }, serializers.String())
	counted := engine.Process(keyed, func() engine.KeyedProcessFunction[string, event, string] {
		return &countEvents{processed: processed, failAt: failAt}
	}, engine.UID("count"), engine.WithState(seenDesc), engine.MaxParallelism(64))
	engine.ToSink(counted, engine.NewFileSink(out, func(s string, _ int64) ([]byte, error) { return []byte(s), nil }), engine.UID("sink"))
	return j
}

func newPaced(t *testing.T, dir string) pacedSource {
	t.Helper()
	s, err := New(dir, Options[event]{SplitBytes: 16 << 10, EventTime: func(e event) int64 { return e.TS }})
	if err != nil {
		t.Fatal(err)
	}
	return pacedSource{Source: s, read: new(atomic.Int64), hold: new(atomic.Int64)}
}

// checkOutput checks that the committed output of the sink directories
// holds every record exactly once, and that the last count of every key
// is the number of its records: the keyed state counted each once.
func checkOutput(t *testing.T, want []string, counts map[string]int, dirs ...string) {
	t.Helper()
	var got []string
	last := map[string]int{}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), "part-") {
				continue
			}
			f, err := os.Open(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				rec, key, n := "", "", 0
				if _, err := fmt.Sscanf(sc.Text(), "%s %s %d", &rec, &key, &n); err != nil {
					t.Fatalf("output line %q: %v", sc.Text(), err)
				}
				got = append(got, rec)
				last[key] = max(last[key], n)
			}
			f.Close()
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		for i := 0; i < min(len(got), len(want)); i++ {
			if got[i] != want[i] {
				t.Fatalf("%d records, want %d; first difference at %d: %s, want %s", len(got), len(want), i, got[i], want[i])
			}
		}
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for k, n := range counts {
		if last[k] != n {
			t.Fatalf("key %s counted %d, want %d", k, last[k], n)
		}
	}
}

// A failure mid-file restarts the job from its last checkpoint: every line
// reaches the sink exactly once and every key's count is its number of
// lines.
func TestExactlyOnceAcrossFailure(t *testing.T) {
	dir, want, counts := writeInput(t)
	for _, backend := range []engine.BackendKind{engine.Heap, engine.Pebble} {
		t.Run(string(backend), func(t *testing.T) {
			tmp := t.TempDir()
			src := newPaced(t, dir)
			if src.Splits() < 9 {
				t.Fatalf("%d splits: too few for several per subtask", src.Splits())
			}
			var processed atomic.Int64
			out := filepath.Join(tmp, "out")
			res, err := engine.Run(context.Background(), fileJob(src, 3, out, &processed, int64(len(want)/2)), engine.RunOptions{
				Backend: backend, CheckpointDir: filepath.Join(tmp, "chk"), CheckpointInterval: 5 * time.Millisecond, MaxRestarts: 2,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Restarts != 1 || len(res.Restored) == 0 {
				t.Fatalf("restarts %d, restored from %q: the failure did not exercise a restore from a checkpoint", res.Restarts, res.Restored)
			}
			checkOutput(t, want, counts, out)
		})
	}
}

// A job stopped with a savepoint while its splits stand mid-file resumes at
// another parallelism on the other backend: the two runs' output holds
// every line exactly once.
func TestStopMidFileRestoreElsewhere(t *testing.T) {
	dir, want, counts := writeInput(t)
	for _, tc := range []struct {
		from, to engine.BackendKind
		p, q     int
		pt       engine.ProcessingTimeMode
	}{
		{engine.Heap, engine.Pebble, 3, 2, engine.WallClock}, {engine.Pebble, engine.Heap, 2, 4, engine.WallClock},
		// Under DeterministicTime a subtask reads a record of each split
		// ahead before its first watermark.
		{engine.Heap, engine.Pebble, 2, 3, engine.DeterministicTime},
	} {
		t.Run(fmt.Sprintf("%s-%d-to-%s-%d-%s", tc.from, tc.p, tc.to, tc.q, tc.pt), func(t *testing.T) {
			tmp := t.TempDir()
			src := newPaced(t, dir)
			src.hold.Store(int64(len(want) * 2 / 5))
			var processed atomic.Int64
			// The restored job commits what the savepoint left pending, in the
			// same directory.
			out, sp := filepath.Join(tmp, "out"), filepath.Join(tmp, "sp")
			h, err := engine.Start(context.Background(), fileJob(src, tc.p, out, &processed, -1), engine.RunOptions{Backend: tc.from, ProcessingTime: tc.pt})
			if err != nil {
				t.Fatal(err)
			}
			for src.read.Load() < src.hold.Load() {
				select {
				case <-h.Done():
					_, err := h.Wait()
					t.Fatalf("the job ended before the stop: %v", err)
				case <-time.After(time.Millisecond):
				}
			}
			if _, err := h.StopWithSavepoint(context.Background(), sp, false); err != nil {
				t.Fatal(err)
			}
			positions := midFile(t, sp)
			if positions == 0 {
				t.Fatal("no split stopped inside its byte range")
			}

			rest := newPaced(t, dir)
			if _, err := engine.Run(context.Background(), fileJob(rest, tc.q, out, &processed, -1), engine.RunOptions{Backend: tc.to, ProcessingTime: tc.pt, RestoreFrom: sp}); err != nil {
				t.Fatal(err)
			}
			// Under DeterministicTime the savepoint cuts a subtask's splits
			// where its watermark reached the savepoint's epoch, so the
			// restored job reads again what the first read after that.
			if n, left := rest.read.Load(), int64(len(want))-src.read.Load(); n != left && (tc.pt == engine.WallClock || n < left) {
				t.Fatalf("the restored job read %d records, want the %d the first did not", n, left)
			}
			checkOutput(t, want, counts, out)
		})
	}
}

// midFile returns how many splits the savepoint's source state leaves
// inside their byte range, reading the state as the toolkit does: by the
// schemas the savepoint names, without the engine's types.
func midFile(t *testing.T, sp string) int {
	t.Helper()
	type position struct {
		Split  int32 `avro:"split"`
		Offset int64 `avro:"offset"`
		MaxTS  int64 `avro:"max_event_time"`
	}
	type identity struct {
		Split    int32  `avro:"split"`
		Identity string `avro:"identity"`
	}
	op, ok := sptest.Open(t, sp).Metadata().Operator("files")
	if !ok {
		t.Fatal("no source operator in the savepoint")
	}
	offsets, ranges := map[int32]int64{}, map[int32][2]int64{}
	for _, st := range op.OperatorStates {
		for _, sub := range st.Subtasks {
			for _, e := range sub {
				switch st.Name {
				case "splits":
					p := decodeAvro[position](t, st.Element, e)
					offsets[p.Split] = p.Offset
				case "split-identities":
					id := decodeAvro[identity](t, st.Element, e)
					var name string
					var r [2]int64
					if _, err := fmt.Sscanf(id.Identity, "%s bytes [%d,%d)", &name, &r[0], &r[1]); err != nil {
						t.Fatalf("identity %q: %v", id.Identity, err)
					}
					ranges[id.Split] = r
				}
			}
		}
	}
	if len(offsets) != len(ranges) || len(offsets) == 0 {
		t.Fatalf("%d positions and %d identities", len(offsets), len(ranges))
	}
	n := 0
	for s, off := range offsets {
		if r := ranges[s]; off > r[0] && off < r[1] {
			n++
		}
	}
	return n
}

func decodeAvro[T any](t *testing.T, snap serializers.Snapshot, b []byte) T {
	t.Helper()
	ser, err := serializers.Avro[T](snap.Schema)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ser.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A restore refuses a directory whose files changed since the savepoint,
// naming the split that differs, instead of resuming one file at another's
// offset: a file added (more splits), or a file rewritten in place with as
// many bytes.
func TestRestoreRefusesChangedInput(t *testing.T) {
	dir, want, _ := writeInput(t)
	src := newPaced(t, dir)
	src.hold.Store(int64(len(want) / 3))
	tmp := t.TempDir()
	out, sp := filepath.Join(tmp, "out"), filepath.Join(tmp, "sp")
	var processed atomic.Int64
	h, err := engine.Start(context.Background(), fileJob(src, 2, out, &processed, -1), engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for src.read.Load() < src.hold.Load() {
		time.Sleep(time.Millisecond)
	}
	if _, err := h.StopWithSavepoint(context.Background(), sp, false); err != nil {
		t.Fatal(err)
	}
	restore := func() error {
		_, err := engine.Run(context.Background(), fileJob(newPaced(t, dir), 2, out, &processed, -1), engine.RunOptions{RestoreFrom: sp})
		return err
	}

	added := filepath.Join(dir, "g.jsonl")
	if err := os.WriteFile(added, []byte(strings.Repeat(`{"file":"g.jsonl"}`+"\n", 2000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := restore(); err == nil || !strings.Contains(err.Error(), "restored 34 split identities, but the source has 37 splits: its input changed since the snapshot") {
		t.Fatalf("a file added: %v", err)
	}
	if err := os.Remove(added); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(dir, "d.jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	copy(b, `{"file":"D.jsonl"`)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	err = restore()
	if err == nil || !regexp.MustCompile(`restored split \d+ was d.jsonl bytes \[(\d+),(\d+)\) of 114604, crc32c [0-9a-f]{8}, but is now d.jsonl bytes \[\d+,\d+\) of 114604, crc32c [0-9a-f]{8}: the source's input changed`).MatchString(err.Error()) {
		t.Fatalf("a file rewritten: %v", err)
	}
}
