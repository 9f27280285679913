package cli_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/stateproc/stateproc/cli"
	"github.com/stateproc/stateproc/internal/crc"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
	"github.com/stateproc/stateproc/ttl"
)

// -update rewrites the files that scripts compare output with (cmp stdout
// FILE) from the output the commands give now.
var update = flag.Bool("update", false, "update the expected output in testdata/script")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"stateproc": func() { os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs testdata/script/*.txt. $SAVEPOINTS is the directory of
// the checked-in savepoints; the condition [savepoint:NAME] says whether
// one is there yet. $FLINK is the directory of Apache Flink's own test
// savepoints beside the module root, which the condition [flink] says are
// there.
func TestScripts(t *testing.T) {
	checkedIn, err := filepath.Abs("../testdata/savepoints/v2")
	if err != nil {
		t.Fatal(err)
	}
	flinkResources, err := filepath.Abs("../../shared/flink-savepoints/flink-tests/src/test/resources")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("SAVEPOINTS", checkedIn)
			env.Setenv("FLINK", flinkResources)
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "flink" {
				_, err := os.Stat(flinkResources)
				return err == nil, nil
			}
			if name, ok := strings.CutPrefix(cond, "savepoint:"); ok {
				_, err := os.Stat(filepath.Join(checkedIn, name, snapshotfmt.MetadataName))
				return err == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mksavepoint":  cmdMksavepoint,
			"mkcheckpoint": cmdMkcheckpoint,
			"mkunions":     cmdMkunions,
			"flipbyte":     cmdFlipbyte,
			"datafile":     cmdDatafile,
			"exits":        cmdExits,
			"mkmanifest":   cmdMkmanifest,
		},
	})
}

// cmdMksavepoint writes the demo savepoint into a new directory:
// mksavepoint [-zstd] [-badvalue] [-badindex] [-recursive] DIR. With -zstd
// its blocks are compressed; with -badvalue the usd_total of account 7 is 3
// bytes, which frame correctly but do not decode as an int64; with
// -badindex the index claims one entry more for the first segment than it
// holds, under valid checksums; with -recursive the session record has a
// field of its own type (null in every value), a schema with no Arrow type.
func cmdMksavepoint(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! mksavepoint")
	}
	var opts snapshotfmt.Options
	meta, entries := demoMeta(), demoEntries()
	badIndex := false
	for len(args) > 1 {
		switch args[0] {
		case "-badindex":
			badIndex = true
		case "-zstd":
			opts.Compression = snapshotfmt.CodecZstd
		case "-badvalue":
			entries[usdTotal][1].Value = []byte{1, 2, 3}
		case "-recursive":
			meta.Operators[0].States[0].Value.Schema = recursiveSessionSchema
			for i := range entries[session] {
				entries[session][i].Value = append(entries[session][i].Value, 0) // union branch 0: null
			}
		default:
			ts.Fatalf("mksavepoint: unknown flag %s", args[0])
		}
		args = args[1:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: mksavepoint [-zstd] [-badvalue] [-badindex] [-recursive] DIR")
	}
	dir := ts.MkAbs(args[0])
	if !badIndex {
		ts.Check(sptest.Write(dir, meta, entries, opts))
		return
	}
	good := dir + ".good"
	ts.Check(sptest.Write(good, meta, entries, opts))
	ts.Check(copyMiscounted(good, dir))
	ts.Check(os.RemoveAll(good))
}

// copyMiscounted copies the savepoint at src to dst and adds one to the
// entries that the index gives its first segment, in place in the metadata
// body, whose checksum it then recomputes: the copy's checksums are all
// valid and only reading the data shows that the index is wrong.
func copyMiscounted(src, dst string) error {
	ctx := context.Background()
	r, err := snapshotfmt.Open(ctx, storage.LocalDir(src))
	if err != nil {
		return err
	}
	meta, version := r.Metadata(), r.Layout().Version
	segs, err := savepoint.AllSegments(ctx, r)
	r.Close()
	if err != nil {
		return err
	}
	if len(segs) == 0 || segs[0].Entries >= 127 {
		return fmt.Errorf("copyMiscounted: %s has no first segment with a one-byte entry count", src)
	}
	s := segs[0]
	ref := s.Ref.State // the format's ref: keyed states, then timer services
	if s.Ref.Timer {
		ref += len(meta.Operators[s.Ref.Operator].States)
	}
	var fields []byte
	for _, v := range []uint64{uint64(s.KeyGroup), uint64(ref), 0, uint64(s.Offset), uint64(s.Length), s.Keys} {
		fields = binary.AppendUvarint(fields, v)
	}
	fields = append(fields, byte(s.Entries))
	m, err := os.ReadFile(filepath.Join(src, snapshotfmt.MetadataName))
	if err != nil {
		return err
	}
	const preamble, lengthField = 12, 8
	at := bytes.Index(m[preamble+lengthField:], fields)
	if at < 0 || bytes.Index(m[preamble+lengthField+at+1:], fields) >= 0 {
		return fmt.Errorf("copyMiscounted: the index entry of %s (file index 0) is not once in its metadata", s.File)
	}
	at += preamble + lengthField + len(fields)
	m[at-1]++
	// From version 2 the index also gives the segment's histograms, which
	// must count as many entries as it does: the one entry's bucket counts
	// two.
	if !s.Ref.Timer && version >= 2 {
		st := meta.Operators[s.Ref.Operator].States[s.Ref.State]
		_, n := binary.Uvarint(m[at:]) // bytes
		at += n
		if st.TTL != nil {
			at += 16 // min and max timestamp
		}
		if at, err = countOneMore(m, at); err != nil {
			return err
		}
		if st.TTL != nil {
			_, n := binary.Varint(m[at:]) // anchor
			if at, err = countOneMore(m, at+n); err != nil {
				return err
			}
		}
	}
	binary.BigEndian.PutUint32(m[len(m)-4:], crc.Checksum(m[preamble:len(m)-4]))
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, snapshotfmt.MetadataName), m, 0o644)
}

// countOneMore adds one to the count of the histogram at m[at:], which
// must hold a single bucket counting one entry, and returns where the
// histogram ends.
func countOneMore(m []byte, at int) (int, error) {
	if m[at] != 1 {
		return 0, fmt.Errorf("copyMiscounted: a histogram of %d buckets, not 1", m[at])
	}
	_, n := binary.Uvarint(m[at+1:]) // gap
	at += 1 + n
	if m[at] != 1 {
		return 0, fmt.Errorf("copyMiscounted: a histogram bucket counting %d, not 1", m[at])
	}
	m[at]++
	return at + 1, nil
}

// cmdExits runs a program and checks its exit code, which ! exec does not:
// exits CODE PROGRAM [ARGS...]. Its stdout and stderr are kept for the
// stdout and stderr commands that follow.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = exit.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// cmdDatafile sets $VAR to the name of the data file of savepoint DIR that
// was created as NAME (data-000 unless given), whatever its content
// suffix, and fails if there is none: datafile VAR DIR [NAME].
func cmdDatafile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: datafile VAR DIR [NAME]")
	}
	given := "data-000"
	if len(args) == 3 {
		given = args[2]
	}
	r, err := snapshotfmt.Open(context.Background(), storage.LocalDir(ts.MkAbs(args[1])))
	ts.Check(err)
	defer r.Close()
	for _, name := range r.DataFiles() {
		if snapshotfmt.GivenName(name) == given {
			ts.Setenv(args[0], name)
			return
		}
	}
	ts.Fatalf("%s has no data file created as %s: %v", args[1], given, r.DataFiles())
}

// cmdMkmanifest writes the manifest of the demo savepoint's job:
// mkmanifest [-maxp N] FILE. With -maxp, the keyed operators have max
// parallelism N.
func cmdMkmanifest(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! mkmanifest")
	}
	ops := demoMeta().Operators
	if len(args) == 3 && args[0] == "-maxp" {
		maxP, err := strconv.Atoi(args[1])
		ts.Check(err)
		for i := range ops {
			if ops[i].Keyed() {
				ops[i].MaxParallelism = maxP
			}
		}
		args = args[2:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: mkmanifest [-maxp N] FILE")
	}
	f, err := os.Create(ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Check(savepoint.NewManifest("demo", ops).Write(f))
	ts.Check(f.Close())
}

// cmdFlipbyte inverts the bits of one byte of a file: flipbyte FILE OFFSET.
// A negative offset counts from the end.
func cmdFlipbyte(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: flipbyte FILE OFFSET")
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	off, err := strconv.Atoi(args[1])
	ts.Check(err)
	if off < 0 {
		off += len(b)
	}
	if off < 0 || off >= len(b) {
		ts.Fatalf("offset %s outside the %d bytes of %s", args[1], len(b), args[0])
	}
	b[off] ^= 0xff
	ts.Check(os.WriteFile(path, b, 0o644))
}

// The demo savepoint's clock: 2023-11-14T22:13:20Z.
const demoNow = 1_700_000_000_000

const (
	hour = int64(time.Hour / time.Millisecond)
	day  = 24 * hour
)

const sessionSchema = `{"type":"record","name":"Session","namespace":"com.example","fields":[{"name":"id","type":"string"},{"name":"started","type":"long"}]}`

const recursiveSessionSchema = `{"type":"record","name":"Session","namespace":"com.example","fields":[{"name":"id","type":"string"},{"name":"started","type":"long"},{"name":"previous","type":["null","Session"]}]}`

func snap(k serializers.Kind, args ...serializers.Snapshot) serializers.Snapshot {
	return serializers.Snapshot{Kind: k, Args: args}
}

// demoMeta is a small job: a keyed operator with string keys and a state of
// every common shape (TTL value with an Avro record, TTL map, list, windowed
// reducing), a timer service; an operator with int64 keys; and a non-keyed
// source with operator list state and broadcast state.
func demoMeta() *savepoint.Metadata {
	week := ttl.New(7 * 24 * time.Hour)
	week.CleanupFullSnapshot = true
	oneDay := ttl.Config{TTL: 24 * time.Hour, Update: ttl.OnReadAndWrite, Visibility: ttl.ReturnExpiredIfNotCleanedUp, SweepBudget: 1000}
	void := snap(serializers.KindVoid)
	return &savepoint.Metadata{
		ID: 42, CreatedAt: demoNow,
		Operators: []savepoint.Operator{
			{
				UID: "features", Name: "SessionFeatures", Parallelism: 2, MaxParallelism: 128,
				KeyHash: keygroup.Murmur3, Key: snap(serializers.KindString),
				States: []savepoint.KeyedState{
					{Name: "session", Kind: savepoint.Value, Namespace: void,
						Value: serializers.Snapshot{Kind: serializers.KindAvro, Schema: sessionSchema}, TTL: &oneDay},
					{Name: "category-counts", Kind: savepoint.Map, Namespace: void,
						MapKey: snap(serializers.KindString), Value: snap(serializers.KindInt64), TTL: &week},
					{Name: "events", Kind: savepoint.List, Namespace: void, Value: snap(serializers.KindString)},
					{Name: "clicks", Kind: savepoint.Reducing, Namespace: snap(serializers.KindWindow), Value: snap(serializers.KindInt64)},
				},
				Timers: []savepoint.TimerService{{Name: "session-end", Namespace: void}},
			},
			{
				UID: "accounts", Name: "TenantCost", Parallelism: 1, MaxParallelism: 128,
				KeyHash: keygroup.Murmur3, Key: snap(serializers.KindInt64),
				States: []savepoint.KeyedState{{Name: "usd_total", Kind: savepoint.Value, Namespace: void, Value: snap(serializers.KindInt64)}},
			},
			{
				UID: "source", Name: "Events", Parallelism: 2, MaxParallelism: 128,
				OperatorStates: []savepoint.OperatorState{{
					Name: "offsets", Distribution: savepoint.EvenSplit, Element: snap(serializers.KindInt64),
					Subtasks: [][][]byte{{i64(100), i64(101)}, {i64(200)}},
				}},
				BroadcastStates: []savepoint.BroadcastState{{
					Name: "rules", Key: snap(serializers.KindString), Value: snap(serializers.KindString),
					Entries: []savepoint.BroadcastEntry{{Key: []byte("max-clicks"), Value: []byte("100")}, {Key: []byte("region"), Value: []byte("eu")}},
				}},
			},
		},
	}
}

func i64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func ttlValue(lastModified int64, v []byte) []byte { return append(i64(lastModified), v...) }

func window(start, end int64) []byte { return append(i64(start), i64(end)...) }

// demoEntries lists the demo's entries by (operator, ref). Its figures are
// small enough to check by hand in the scripts:
//   - session (TTL 1d): alice 2h old, bob 2d old (expired), dave 12h old.
//   - category-counts (TTL 7d): alice 3 categories 1h old, bob 2 8d old
//     (expired), carol 1 3d old, dave 20 categories 6d old, erin 1 modified
//     an hour after the savepoint (in the future).
//   - events: alice [login view buy], bob [login].
//   - clicks: alice 5 in [0, 60s) and 7 in [60s, 120s); dave 1 in [0, 60s).
//   - session-end: alice +30m, bob +1h, dave +10m and +20m.
//   - usd_total: 42 → 1500000, 7 → 250000.
//
// The keyed states and timer service of the demo savepoint.
var (
	session    = savepoint.StateRef{Operator: 0, State: 0}
	counts     = savepoint.StateRef{Operator: 0, State: 1}
	events     = savepoint.StateRef{Operator: 0, State: 2}
	clicks     = savepoint.StateRef{Operator: 0, State: 3}
	sessionEnd = savepoint.StateRef{Operator: 0, State: 0, Timer: true}
	usdTotal   = savepoint.StateRef{Operator: 1, State: 0}
)

func demoEntries() map[savepoint.StateRef][]savepoint.Entry {
	avro := func(id string, started int64) []byte {
		s, err := serializers.AvroGeneric(sessionSchema)
		if err != nil {
			panic(err)
		}
		b, err := s.AppendAny(nil, map[string]any{"id": id, "started": started})
		if err != nil {
			panic(err)
		}
		return b
	}
	e := map[savepoint.StateRef][]savepoint.Entry{}
	add := func(ref savepoint.StateRef, en savepoint.Entry) { e[ref] = append(e[ref], en) }
	str := func(s string) []byte { return []byte(s) }
	add(session, savepoint.Entry{Key: str("alice"), Value: ttlValue(demoNow-2*hour, avro("s-1", demoNow-3*hour))})
	add(session, savepoint.Entry{Key: str("bob"), Value: ttlValue(demoNow-2*day, avro("s-2", demoNow-3*day))})
	add(session, savepoint.Entry{Key: str("dave"), Value: ttlValue(demoNow-12*hour, avro("s-3", demoNow-13*hour))})
	for _, c := range []string{"books", "games", "music"} {
		add(counts, savepoint.Entry{Key: str("alice"), MapKey: str(c), Value: ttlValue(demoNow-hour, i64(3))})
	}
	for _, c := range []string{"books", "toys"} {
		add(counts, savepoint.Entry{Key: str("bob"), MapKey: str(c), Value: ttlValue(demoNow-8*day, i64(1))})
	}
	add(counts, savepoint.Entry{Key: str("carol"), MapKey: str("garden"), Value: ttlValue(demoNow-3*day, i64(2))})
	for i := range 20 {
		add(counts, savepoint.Entry{Key: str("dave"), MapKey: fmt.Appendf(nil, "cat-%02d", i), Value: ttlValue(demoNow-6*day, i64(int64(i)))})
	}
	add(counts, savepoint.Entry{Key: str("erin"), MapKey: str("books"), Value: ttlValue(demoNow+hour, i64(1))})
	for _, ev := range []string{"login", "view", "buy"} {
		add(events, savepoint.Entry{Key: str("alice"), Value: str(ev)})
	}
	add(events, savepoint.Entry{Key: str("bob"), Value: str("login")})
	add(clicks, savepoint.Entry{Key: str("alice"), Namespace: window(0, 60_000), Value: i64(5)})
	add(clicks, savepoint.Entry{Key: str("alice"), Namespace: window(60_000, 120_000), Value: i64(7)})
	add(clicks, savepoint.Entry{Key: str("dave"), Namespace: window(0, 60_000), Value: i64(1)})
	for _, t := range []struct {
		key string
		at  int64
	}{{"alice", 30 * 60_000}, {"bob", hour}, {"dave", 10 * 60_000}, {"dave", 20 * 60_000}} {
		add(sessionEnd, savepoint.Entry{Key: str(t.key), Timestamp: demoNow + t.at})
	}
	add(usdTotal, savepoint.Entry{Key: i64(42), Value: i64(1_500_000)})
	add(usdTotal, savepoint.Entry{Key: i64(7), Value: i64(250_000)})
	return e
}
