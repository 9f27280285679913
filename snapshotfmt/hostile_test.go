package snapshotfmt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/internal/crc"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/storage"
)

// metadataFile frames a body as a complete _metadata file with a valid CRC,
// so that a test reaches the body decoder with whatever it wrote.
func metadataFile(body []byte) []byte {
	b := appendPreamble(nil, typeMetadata)
	b = binary.BigEndian.AppendUint64(b, uint64(len(body)))
	b = append(b, body...)
	return binary.BigEndian.AppendUint32(b, crc.Checksum(b[preambleLen:]))
}

// openingDir records the names a reader opens.
type openingDir struct {
	*memDir
	opened []string
}

func (o *openingDir) Open(ctx context.Context, name string) (storage.File, error) {
	o.opened = append(o.opened, name)
	return o.memDir.Open(ctx, name)
}

// decodedSmall returns the model and index of a small valid savepoint, for
// tests that change them and encode them again.
func decodedSmall(t *testing.T) (*memDir, *savepoint.Metadata, *index) {
	d := smallSavepoint(t)
	b := d.files[MetadataName]
	m, idx, err := decodeMetadataBody(b[metadataHeaderLen:len(b)-4], NewestVersion)
	if err != nil {
		t.Fatal(err)
	}
	return d, m, idx
}

func openBody(t *testing.T, d *memDir, body []byte) error {
	t.Helper()
	d = d.clone()
	d.files[MetadataName] = metadataFile(body)
	r, err := Open(context.Background(), d)
	if err == nil {
		r.Close()
	}
	return err
}

func wantCorrupt(t *testing.T, err error, msg string) *savepoint.Error {
	t.Helper()
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("error %v, want ErrCorrupt", err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Fatalf("error %q does not say %q", err, msg)
	}
	var e *savepoint.Error
	if !errors.As(err, &e) || e.File == "" {
		t.Fatalf("error %v names no file", err)
	}
	t.Log(err)
	return e
}

func TestHostileDataFileNames(t *testing.T) {
	for _, name := range []string{"../x", "/etc/passwd", "a/../../b", `..\x`, "", "./x", MetadataName} {
		d, m, idx := decodedSmall(t)
		old := idx.files[0].name
		idx.files[0].name = name
		for _, segs := range idx.segments {
			for i := range segs {
				if segs[i].File == old {
					segs[i].File = name
				}
			}
		}
		od := &openingDir{memDir: d.clone()}
		od.files[MetadataName] = metadataFile(encodeMetadataBody(m, idx))
		_, err := Open(context.Background(), od)
		e := wantCorrupt(t, err, "invalid file name")
		if !errors.Is(err, storage.ErrBadName) && name != MetadataName {
			t.Errorf("%q: error %v does not match storage.ErrBadName", name, err)
		}
		if e.File != MetadataName || e.Offset <= metadataHeaderLen {
			t.Errorf("%q: error located at %s offset %d", name, e.File, e.Offset)
		}
		if len(od.opened) != 1 {
			t.Errorf("%q: opened %v before refusing the name", name, od.opened)
		}
	}
}

func TestHostileLengths(t *testing.T) {
	d := smallSavepoint(t)
	id := []byte{1}
	created := make([]byte, 16) // creation time and watermark
	body := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

	// A lineage string claims 1000 bytes; 3 follow.
	err := openBody(t, d, body(id, created, []byte{1}, binary.AppendUvarint(nil, 1000), []byte("abc")))
	e := wantCorrupt(t, err, "length 1000 beyond the 3 bytes remaining")
	if e.Offset != metadataHeaderLen+18 {
		t.Errorf("offset %d, want %d", e.Offset, metadataHeaderLen+18)
	}
	// A count of a billion operators in a few bytes.
	err = openBody(t, d, body(id, created, []byte{0, 0}, binary.AppendUvarint(nil, 1e9), []byte("xy")))
	wantCorrupt(t, err, "count 1000000000 beyond the 2 bytes remaining")
	// Uvarints: overlong, past the end, over 64 bits.
	wantCorrupt(t, openBody(t, d, body([]byte{0x81, 0x00}, created, []byte{0, 0, 0})), "non-minimal uvarint")
	wantCorrupt(t, openBody(t, d, body(id, created, []byte{0, 0, 0x80})), "runs past the end")
	wantCorrupt(t, openBody(t, d, body(bytes.Repeat([]byte{0xff}, 10), []byte{1})), "overflows 64 bits")
	// Trailing bytes after the body's last operator.
	wantCorrupt(t, openBody(t, d, body(id, created, []byte{0, 0, 0, 7})), "1 trailing bytes")

	// The body length field: larger than the file, and absurdly large.
	for _, n := range []uint64{1 << 20, math.MaxUint64} {
		c := d.clone()
		binary.BigEndian.PutUint64(c.files[MetadataName][preambleLen:], n)
		_, err := Open(context.Background(), c)
		e := wantCorrupt(t, err, "beyond the")
		if e.Offset != preambleLen {
			t.Errorf("body length error at offset %d", e.Offset)
		}
	}
	c := d.clone()
	c.files[MetadataName] = append(c.files[MetadataName], 0)
	_, err = Open(context.Background(), c)
	wantCorrupt(t, err, "trailing garbage")
}

func TestHostileStructure(t *testing.T) {
	deep := snap(serializers.KindBytes)
	for range maxSnapshotDepth {
		deep = snap(serializers.KindNullable, deep)
	}
	for _, tc := range []struct {
		name   string
		change func(m *savepoint.Metadata, idx *index)
		want   string
	}{
		{"nesting", func(m *savepoint.Metadata, _ *index) { m.Operators[0].States[1].Value = deep }, "nest deeper than 32"},
		{"unknown serializer", func(m *savepoint.Metadata, _ *index) { m.Operators[0].States[1].Value = snap("uuid") }, "unknown serializer kind code 0"},
		{"unknown state kind", func(m *savepoint.Metadata, _ *index) { m.Operators[0].States[3].Kind = 6 }, "unknown state kind code 6"},
		{"key hash", func(m *savepoint.Metadata, _ *index) { m.Operators[0].KeyHash = 2 }, "unknown key hash function 2"},
		{"bad avro", func(m *savepoint.Metadata, _ *index) { m.Operators[0].States[0].Value.Schema = "{" }, "avro schema does not parse"},
		{"duplicate uid", func(m *savepoint.Metadata, _ *index) { m.Operators[1].UID = m.Operators[0].UID }, "two operators"},
		{"duplicate timer service", func(m *savepoint.Metadata, _ *index) {
			m.Operators[0].Timers = append(m.Operators[0].Timers, m.Operators[0].Timers[0])
		}, "two timer services"},
		{"subtasks", func(m *savepoint.Metadata, _ *index) { m.Operators[1].Parallelism = 2 }, "lists 3 subtasks"},
		{"broadcast order", func(m *savepoint.Metadata, _ *index) {
			m.Operators[0].BroadcastStates[0].Entries[1].Key = []byte("a")
		}, "not strictly increasing"},
		{"segment order", func(_ *savepoint.Metadata, idx *index) {
			s := idx.segments[0]
			s[0], s[1] = s[1], s[0]
		}, "must be sorted by (key group, ref)"},
		{"segment key group", func(_ *savepoint.Metadata, idx *index) { idx.segments[0][0].KeyGroup = 16 }, "not below max parallelism"},
		{"segment ref", func(_ *savepoint.Metadata, idx *index) {
			idx.segments[0][0].Ref = savepoint.StateRef{State: 9, Timer: true}
		}, "names no state"},
		{"segment beyond file", func(_ *savepoint.Metadata, idx *index) { idx.segments[0][0].Length += 1 << 40 }, "ends beyond"},
		{"segment in preamble", func(_ *savepoint.Metadata, idx *index) { idx.segments[0][0].Offset = 4 }, "inside the preamble"},
		{"timer keys", func(_ *savepoint.Metadata, idx *index) {
			for i := range idx.segments[0] {
				if idx.segments[0][i].Ref.Timer {
					idx.segments[0][i].Keys = 1
				}
			}
		}, "timer segment counts 1 keys"},
		{"keys above entries", func(_ *savepoint.Metadata, idx *index) { idx.segments[0][0].Keys = idx.segments[0][0].Entries + 1 }, "keys for"},
		{"timestamps", func(_ *savepoint.Metadata, idx *index) { idx.segments[0][0].MinTimestamp = math.MaxInt64 }, "minimum timestamp"},
		{"overlap", func(_ *savepoint.Metadata, idx *index) { growFirstInFile(idx, 1) }, "segments overlap"},
		{"gap", func(_ *savepoint.Metadata, idx *index) { growFirstInFile(idx, -1) }, "belong to no segment"},
		{"segment dropped", func(_ *savepoint.Metadata, idx *index) { idx.segments[0] = idx.segments[0][1:] }, "belong to no segment"},
		{"files unsorted", func(_ *savepoint.Metadata, idx *index) {
			idx.files[0], idx.files[1] = idx.files[1], idx.files[0]
		}, "must be sorted and unique"},
		{"file size", func(_ *savepoint.Metadata, idx *index) { idx.files[1].size = 3 }, "shorter than its preamble"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, m, idx := decodedSmall(t)
			tc.change(m, idx)
			wantCorrupt(t, openBody(t, d, encodeMetadataBody(m, idx)), tc.want)
		})
	}
}

// growFirstInFile changes the length of the segment that starts right after
// the preamble of the first data file, so that it overlaps the next one or
// leaves a gap.
func growFirstInFile(idx *index, by int64) {
	for _, segs := range idx.segments {
		for i := range segs {
			if segs[i].File == idx.files[0].name && segs[i].Offset == preambleLen {
				segs[i].Length += by
				return
			}
		}
	}
	panic("no first segment")
}

func TestTTLFlagBits(t *testing.T) {
	d, m, idx := decodedSmall(t)
	on := encodeMetadataBody(m, idx)
	m.Operators[0].States[2].TTL.CleanupFullSnapshot = false
	off := encodeMetadataBody(m, idx)
	i := 0
	for on[i] == off[i] {
		i++
	}
	on[i] |= 0x02
	wantCorrupt(t, openBody(t, d, on), "unknown TTL flag bits 0x02")
}

func TestTruncatedMetadata(t *testing.T) {
	d := smallSavepoint(t)
	full := d.files[MetadataName]
	for n := range len(full) {
		c := d.clone()
		c.files[MetadataName] = full[:n]
		_, err := Open(context.Background(), c)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), MetadataName) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
	}
	for name, b := range d.files {
		if name == MetadataName {
			continue
		}
		for _, n := range []int{0, 5, 12, len(b) - 1} {
			c := d.clone()
			c.files[name] = b[:n]
			_, err := Open(context.Background(), c)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), name) {
				t.Fatalf("%s truncated to %d bytes: %v", name, n, err)
			}
		}
	}
}

// claimingDir serves its _metadata with a size far beyond its bytes, as a
// store that lies about an object's length would.
type claimingDir struct {
	*memDir
	claim int64
}

type claimingFile struct {
	storage.File
	claim int64
}

func (f claimingFile) Size() int64 { return f.claim }

func (c claimingDir) Open(ctx context.Context, name string) (storage.File, error) {
	f, err := c.memDir.Open(ctx, name)
	if err != nil || name != MetadataName {
		return f, err
	}
	return claimingFile{f, c.claim}, nil
}

// TestMetadataClaimingTerabytes: a _metadata whose store claims a size of
// a terabyte and serves a few hundred bytes fails as truncated, at the
// offset where its bytes end, without asking memory for the claim.
func TestMetadataClaimingTerabytes(t *testing.T) {
	d := smallSavepoint(t)
	n := len(d.files[MetadataName])
	_, err := Open(context.Background(), claimingDir{d, 1 << 40})
	e := wantCorrupt(t, err, "truncated")
	if e.Offset != int64(n) || e.File != MetadataName {
		t.Errorf("the error names %s at offset %d, want %s at %d: %v", e.File, e.Offset, MetadataName, n, err)
	}
}

// TestHostileIndexFigures: the index's figures are bounded by the bytes
// they describe before anything is planned from them.
func TestHostileIndexFigures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(s *savepoint.Segment)
		want   string
	}{
		{"entries above raw bytes", func(s *savepoint.Segment) { s.Entries, s.Keys = s.Bytes+1, 1 }, "entries in"},
		{"raw bytes beyond any expansion", func(s *savepoint.Segment) { s.Bytes = uint64(s.Length)*maxZstdExpansion + 1 }, "can hold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, m, idx := decodedSmall(t)
			tc.change(&idx.segments[0][0])
			wantCorrupt(t, openBody(t, d, encodeMetadataBody(m, idx)), tc.want)
		})
	}
}
