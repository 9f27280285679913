package flinkfmt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// Flink derives an operator id from its uid; NOTES.md verified this vector
// on a Flink 2.0 savepoint.
func TestUIDHash(t *testing.T) {
	if got := UIDHash("datagen-source-uid").String(); got != "47aee94394d6ea26e2d544bef0a37bb5" {
		t.Errorf("UIDHash = %s", got)
	}
}

// Versions 6 and 7 (Flink 2.1 and later) have no fixture; these files are
// built from MetadataV6Serializer's layout: version 5's operator name and
// uid, channel state handles with a type byte, merged channel handles, and
// in version 7 a marker per subtask.
func TestMetadataVersions5To7(t *testing.T) {
	for _, v := range []int{5, 6, 7} {
		stream, offs := operatorStream("names", "a")
		inline := bld(nil).u8(byte(StreamInline)).utf("inline").i32(len(stream)).raw(stream...)
		id := UIDHash("datagen-source-uid")
		b := bld(nil).i32(Magic).i32(v).i64(42).
			i32(1).i32(masterStateMagic).i32(4+2+2+4+3).i32(1).utf("hk").i32(3).raw(1, 2, 3).
			i32(2).
			utf("Source: datagen").utf("datagen-source-uid").raw(id[:]...).i32(2).i32(128).
			u8(byte(StreamInline)).utf("coordinator").i32(2).raw(9, 9).
			i32(2).
			i32(0).i32(1).operatorHandle("names", offs, inline).i32(0).u8(0).u8(0)
		// Channel state: one input channel, and from version 6 one merged
		// result-subpartition handle.
		if v == 5 {
			b = b.i32(1).i32(0).i32(1).i32(2).i32(1).i64(0).i64(5).u8(byte(StreamInline)).utf("ch").i32(5).raw(1, 2, 3, 4, 5).i32(0)
		} else {
			b = b.i32(1).u8(1).i32(0).i32(1).i32(2).i32(1).i64(0).i64(5).u8(byte(StreamInline)).utf("ch").i32(5).raw(1, 2, 3, 4, 5)
			b = b.i32(1).u8(4).i32(0).i64(3).u8(byte(StreamInline)).utf("merged").i32(3).raw(7, 7, 7).i32(2).raw(0, 1)
		}
		if v >= 7 {
			b = b.u8(1).i64(41)
		}
		b = b.i32(-2) // subtask 1 had finished: nothing follows
		other := UIDHash("sink")
		b = b.utf("").utf("").raw(other[:]...).i32(1).i32(128).u8(0).i32(-1)
		m, err := ParseMetadata(b)
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		if m.Version != v || m.CheckpointID != 42 || len(m.Masters) != 1 || m.Masters[0].Name != "hk" || len(m.Operators) != 2 {
			t.Fatalf("version %d: %+v", v, m)
		}
		op := m.Operators[0]
		if op.Name != "Source: datagen" || op.UID != "datagen-source-uid" || op.Parallelism != 2 || op.Coordinator == nil || len(op.Subtasks) != 2 {
			t.Errorf("version %d: operator %+v", v, op)
		}
		st := op.Subtasks[0]
		if len(st.InputChannels) != 1 || st.InputChannels[0].StateSize != 5 || !op.Subtasks[1].Finished || op.Subtasks[1].Index != 1 {
			t.Errorf("version %d: subtasks %+v", v, op.Subtasks)
		}
		if v >= 6 && (len(st.ResultSubpartitions) != 1 || st.ResultSubpartitions[0].StateSize != 3) {
			t.Errorf("version %d: merged channel state %+v", v, st.ResultSubpartitions)
		}
		if !m.Operators[1].Finished {
			t.Errorf("version %d: the finished operator", v)
		}
		r := &Reader{meta: m}
		for _, ref := range []string{"datagen-source-uid", "Source: datagen", id.String()} {
			if got, err := r.Operator(ref); err != nil || got != op {
				t.Errorf("version %d: Operator(%q) = %v, %v", v, ref, got, err)
			}
		}
		if got, err := r.Operator("sink"); err != nil || got != m.Operators[1] {
			t.Errorf("version %d: an operator without a recorded uid by its uid: %v", v, err)
		}
		if _, err := r.Operator("nothing"); !errors.Is(err, ErrNoOperator) {
			t.Errorf("version %d: %v", v, err)
		}
	}
}

func TestMetadataRefusals(t *testing.T) {
	if _, err := ParseMetadata([]byte("STPROC..")); !errors.Is(err, ErrNotFlink) {
		t.Errorf("foreign file: %v", err)
	}
	for _, v := range []int{1, 8} {
		if _, err := ParseMetadata(bld(nil).i32(Magic).i32(v)); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "version") {
			t.Errorf("version %d: %v", v, err)
		}
	}
	b := bld(nil).i32(Magic).i32(3).i64(1).i32(0).i32(0x7fffffff)
	if _, err := ParseMetadata(b); !errors.Is(err, ErrCorrupt) || !errors.Is(err, snapshotfmt.ErrCorrupt) || !strings.Contains(err.Error(), "operator states") {
		t.Errorf("a hostile operator count: %v", err)
	}
}

// Every prefix of real metadata files fails cleanly.
func TestMetadataTruncated(t *testing.T) {
	root, rows := inventory(t)
	n := 0
	for _, row := range rows {
		b, err := os.ReadFile(filepath.Join(root, row.dir, MetadataFile))
		if err != nil || len(b) > 8<<10 || n >= 6 {
			continue
		}
		n++
		for i := 0; i < len(b); i++ {
			if _, err := ParseMetadata(b[:i]); err == nil && row.version < "4" {
				t.Fatalf("%s: a prefix of %d of %d bytes parsed", row.dir, i, len(b))
			} else if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotFlink) {
				t.Fatalf("%s: prefix %d: %v", row.dir, i, err)
			}
		}
	}
}

// An absolute path in the metadata is looked up by its base name in the
// savepoint directory, or where the path map sends it, and nowhere else.
func TestAbsolutePaths(t *testing.T) {
	ctx := context.Background()
	stream, offs := operatorStream("names", "moved", "here")
	dir := t.TempDir()
	other := t.TempDir()
	write := func(p string, b []byte) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := func(path string) bld { return bld(nil).u8(byte(StreamFile)).i64(int64(len(stream))).utf(path) }
	read := func(h bld, opts Options) ([]string, error) {
		write(filepath.Join(dir, MetadataFile), metadata(3, OperatorID{1}, "", "", bld(nil).operatorHandle("names", offs, h)))
		r, err := Open(ctx, storage.LocalDir(dir), opts)
		if err != nil {
			return nil, err
		}
		states, _, err := r.OperatorStates(ctx, r.Metadata().Operators[0])
		if err != nil {
			return nil, err
		}
		var out []string
		for _, e := range states[0].Subtasks[0].Elements {
			v, err := states[0].Element.Decode(e)
			if err != nil {
				return nil, err
			}
			out = append(out, v.(string))
		}
		return out, nil
	}
	write(filepath.Join(dir, "a1b2"), stream)
	if got, err := read(file("hdfs://namenode:8020/flink/chk-7/a1b2"), Options{}); err != nil || strings.Join(got, ",") != "moved,here" {
		t.Errorf("by base name: %v, %v", got, err)
	}
	write(filepath.Join(dir, "sub", "c3"), stream)
	if got, err := read(file("s3://bucket/flink/chk-7/c3"), Options{PathMap: map[string]string{"s3://bucket/flink/chk-7": "sub"}}); err != nil || len(got) != 2 {
		t.Errorf("mapped into the savepoint: %v, %v", got, err)
	}
	write(filepath.Join(other, "d4"), stream)
	if got, err := read(file("/old/place/d4"), Options{PathMap: map[string]string{"/old/place": other}}); err != nil || len(got) != 2 {
		t.Errorf("mapped elsewhere: %v, %v", got, err)
	}
	if _, err := read(file("/old/place/d4"), Options{}); err == nil {
		t.Error("a file outside the savepoint was read without a path map")
	}
	rel := bld(nil).u8(byte(StreamRelativeFile)).utf("../" + filepath.Base(other) + "/d4").i64(int64(len(stream)))
	if _, err := read(rel, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a relative path leaving the savepoint: %v", err)
	}
	if _, err := read(file("/"), Options{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a path without a file name: %v", err)
	}
	if _, err := read(file("/x/../../a1b2"), Options{PathMap: map[string]string{"/x": ".."}}); err == nil {
		t.Error("a path map target leaving the savepoint was followed")
	}
	// A map entry applies to whole directory names only: /old/placement is
	// not under /old/place, so its file is looked up by base name.
	write(filepath.Join(dir, "e5"), stream)
	if got, err := read(file("/old/placement/e5"), Options{PathMap: map[string]string{"/old/place": other}}); err != nil || len(got) != 2 {
		t.Errorf("a path map entry matched part of a directory name: %v, %v", got, err)
	}
}

// Metadata that Flink itself would refuse to build is corrupt: an operator
// whose parallelism passes its max parallelism or whose max parallelism
// passes 2^15, a subtask index past the parallelism, and key groups past
// the max parallelism (which would hide entries in key groups no subtask
// reads).
func TestMetadataImpossibleOperators(t *testing.T) {
	root := fixtureRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "flink-tests/src/test/resources/type-serializer-snapshot-migration-itcase-flink1.15-hashmap-savepoint", MetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	keyedOp := func(m *Metadata) *Operator {
		for _, op := range m.Operators {
			for _, st := range op.Subtasks {
				if st.ManagedKeyed != nil {
					return op
				}
			}
		}
		t.Fatal("no operator with keyed state")
		return nil
	}
	for _, c := range []struct {
		name   string
		change func(op *Operator)
		want   string
	}{
		{"subtask index", func(op *Operator) { op.Subtasks[0].Index = op.Parallelism }, "subtask 1 of parallelism 1"},
		{"parallelism", func(op *Operator) { op.Parallelism = op.MaxParallelism + 4 }, "parallelism 5, max parallelism 1"},
		{"max parallelism", func(op *Operator) { op.MaxParallelism = 40000 }, "max parallelism 40000"},
		{"key groups", func(op *Operator) {
			k := op.Subtasks[0].ManagedKeyed
			k.KeyGroups.Start, k.KeyGroups.End = k.KeyGroups.Start+5, k.KeyGroups.End+5
		}, "holds key groups 5 to 5, past max parallelism 1"},
	} {
		m, err := ParseMetadata(b)
		if err != nil {
			t.Fatal(err)
		}
		c.change(keyedOp(m))
		out, err := EncodeMetadata(m)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, err := ParseMetadata(out); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want corrupt: %q", c.name, err, c.want)
		}
	}
}
