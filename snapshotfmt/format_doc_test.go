package snapshotfmt

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// The example of FORMAT.md: one keyed operator with a string-keyed int64
// value state with a 7-day TTL holding two keys, and one timer.
func exampleMeta() *savepoint.Metadata {
	week := ttl.New(7 * 24 * time.Hour)
	return &savepoint.Metadata{
		ID:        7,
		CreatedAt: 1_700_000_100_000,
		Watermark: 1_700_000_055_000,
		Operators: []savepoint.Operator{{
			UID: "tenant-cost", Name: "TenantCost", Parallelism: 1, MaxParallelism: 128,
			KeyHash: keygroup.Murmur3, Key: snap(serializers.KindString),
			States: []savepoint.KeyedState{{
				Name: "usd_total", Kind: savepoint.Value,
				Namespace: snap(serializers.KindVoid), Value: snap(serializers.KindInt64), TTL: &week,
			}},
			Timers: []savepoint.TimerService{{Name: "event-time", Namespace: snap(serializers.KindVoid)}},
		}},
	}
}

// exampleSegments lists the example's segments in the order they are
// written: "hello" is in key group 71 and "tenant-acme" in 80 (the test
// vectors), and the timer belongs to "hello".
func exampleSegments() []segData {
	ttlValue := func(lastModified, micros int64) []byte {
		return binary.BigEndian.AppendUint64(ts(lastModified), uint64(micros))
	}
	return []segData{
		{op: 0, ref: 0, kg: 71, entries: []savepoint.Entry{{Key: []byte("hello"), Value: ttlValue(1_700_000_000_000, 1_500_000)}}},
		{op: 0, ref: 1, kg: 71, entries: []savepoint.Entry{{Key: []byte("hello"), Timestamp: 1_700_000_060_000}}},
		{op: 0, ref: 0, kg: 80, entries: []savepoint.Entry{{Key: []byte("tenant-acme"), Value: ttlValue(1_700_000_050_000, 250_000)}}},
	}
}

// docHexBlocks returns the files that FORMAT.md shows as hex: fenced blocks
// whose info string is "hex NAME", one field per line: the offset, the
// bytes, and after "#" what they mean. Offsets must run on without gaps.
func docHexBlocks(t *testing.T) map[string][]byte {
	t.Helper()
	doc, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	var name string
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		switch {
		case strings.HasPrefix(text, "```hex "):
			name = strings.TrimPrefix(text, "```hex ")
			files[name] = []byte{}
			continue
		case name != "" && text == "```":
			name = ""
			continue
		case name == "":
			continue
		}
		fields, _, _ := strings.Cut(text, "#")
		words := strings.Fields(fields)
		if len(words) < 2 {
			t.Fatalf("FORMAT.md:%d: want an offset and bytes: %q", line, text)
		}
		off, err := strconv.ParseInt(words[0], 16, 64)
		if err != nil || off != int64(len(files[name])) {
			t.Fatalf("FORMAT.md:%d: offset %s, want %04x", line, words[0], len(files[name]))
		}
		for _, w := range words[1:] {
			b, err := hex.DecodeString(w)
			if err != nil || len(b) != 1 {
				t.Fatalf("FORMAT.md:%d: %q is not a hex byte", line, w)
			}
			files[name] = append(files[name], b[0])
		}
	}
	if len(files) == 0 {
		t.Fatal("FORMAT.md shows no hex block")
	}
	return files
}

func TestFormatExampleIsWhatTheWriterWrites(t *testing.T) {
	doc := docHexBlocks(t)
	got := writeOneFile(t, exampleMeta(), exampleSegments(), Options{})
	if len(got.files) != len(doc) {
		t.Errorf("the writer wrote %d files, FORMAT.md shows %d", len(got.files), len(doc))
	}
	for name, want := range doc {
		b, ok := got.files[name]
		if !ok {
			t.Errorf("the writer wrote no %s", name)
			continue
		}
		if !bytes.Equal(b, want) {
			i := 0
			for i < min(len(b), len(want)) && b[i] == want[i] {
				i++
			}
			t.Errorf("%s: the writer's bytes differ from FORMAT.md's at offset %#x (%d bytes written, %d documented):\n%s", name, i, len(b), len(want), hex.Dump(b))
		}
	}
}

func TestFormatExampleReadsBack(t *testing.T) {
	ctx := context.Background()
	d := newMemDir()
	d.files = docHexBlocks(t)
	r, err := Open(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Version() != Version2 || r.Layout().String() != "stateproc savepoint, format version 2" {
		t.Errorf("version %d, layout %q", r.Version(), r.Layout())
	}
	want := exampleMeta()
	if !reflect.DeepEqual(r.Metadata(), want) {
		t.Fatalf("metadata %+v, want %+v", r.Metadata(), want)
	}
	got := readAll(t, r, 0)
	wantSegs := exampleSegments()
	if len(got) != len(wantSegs) {
		t.Fatalf("%d segments, want %d", len(got), len(wantSegs))
	}
	for i, w := range wantSegs {
		g := got[i]
		if g.ref != w.ref || g.kg != w.kg || len(g.entries) != len(w.entries) {
			t.Fatalf("segment %d: ref %d key group %d, %d entries; want ref %d key group %d, %d entries", i, g.ref, g.kg, len(g.entries), w.ref, w.kg, len(w.entries))
		}
		for j := range w.entries {
			if !sameEntry(&g.entries[j], &w.entries[j]) {
				t.Errorf("segment %d entry %d: %+v, want %+v", i, j, g.entries[j], w.entries[j])
			}
		}
	}
	if err := verify(ctx, r); err != nil {
		t.Fatal(err)
	}
}

// The key-group table of FORMAT.md agrees with package keygroup.
func TestFormatKeyGroupVectors(t *testing.T) {
	doc, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	inTable := false
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "| key | hash | 128 | 720 |") {
			inTable = true
			continue
		}
		if !inTable || strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if len(cells) != 4 {
			t.Fatalf("table row %q has %d cells", line, len(cells))
		}
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "`")
		}
		var key []byte
		if n, ok := strings.CutPrefix(cells[0], "int64 "); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			key = binary.BigEndian.AppendUint64(nil, uint64(v))
		} else {
			s, err := strconv.Unquote(cells[0])
			if err != nil {
				t.Fatalf("key %s: %v", cells[0], err)
			}
			key = []byte(s)
		}
		hash, err1 := strconv.ParseUint(strings.TrimPrefix(cells[1], "0x"), 16, 32)
		kg128, err2 := strconv.Atoi(cells[2])
		kg720, err3 := strconv.Atoi(cells[3])
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("row %q does not parse", line)
		}
		if h, _ := keygroup.Murmur3.Sum(key); h != uint32(hash) {
			t.Errorf("key %s: hash %#08x, FORMAT.md says %#08x", cells[0], h, hash)
		}
		if kg := keygroup.Of(key, 128); kg != kg128 {
			t.Errorf("key %s: key group %d at 128, FORMAT.md says %d", cells[0], kg, kg128)
		}
		if kg := keygroup.Of(key, 720); kg != kg720 {
			t.Errorf("key %s: key group %d at 720, FORMAT.md says %d", cells[0], kg, kg720)
		}
		rows++
	}
	if rows != 5 {
		t.Fatalf("found %d rows in the key-group table of FORMAT.md, want 5", rows)
	}
}
