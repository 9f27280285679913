package hostile

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stateproc/stateproc/internal/crc"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// Level says which commands must refuse an entry of the corpus: how far a
// command must read before it meets the damage.
type Level string

const (
	// LevelMetadata: opening the savepoint meets it; every command exits 4.
	LevelMetadata Level = "metadata"
	// LevelFraming: reading the records of a segment meets it; every command
	// that reads data exits 4 (the rewrites too, which check what they
	// copy), those that answer from the index exit 0.
	LevelFraming Level = "framing"
	// LevelValues: only decoding the values meets it; the commands that decode
	// exit 4, the others 0, and a rewrite's output passes verify.
	LevelValues Level = "values"
	// LevelValid: a savepoint that must be read in bounded memory, every
	// command exiting 0.
	LevelValid Level = "valid"
)

// Entry is one savepoint of the corpus.
type Entry struct {
	Name  string
	Level Level
	// State names the keyed state or timer service of operator Operator
	// where the damage lies, for the commands that read one state.
	State string
	About string
	Files map[string][]byte
	// Links are symbolic links in the savepoint's directory: name → what
	// it points to, relative to the directory.
	Links map[string]string
}

// Operator is the uid of the keyed operator every entry holds; Other is a
// non-keyed one beside it.
const (
	Operator = "hostile"
	Other    = "other"
)

// CreatedAt is every entry's creation time, 2026-01-01T00:00:00Z; its
// values were last modified a second before and live for seven days.
const CreatedAt = 1_767_225_600_000

const maxP = 128

// The states of Operator, in ref order, and its timer service.
const (
	refValues = iota
	refLists
	refRecords
	refMaps
	refTimers
)

// recordSchema is the Avro value of the records state: a name and an
// optional count.
const recordSchema = `{"type":"record","name":"R","fields":[{"name":"name","type":"string"},{"name":"n","type":["null","long"]}]}`

// recordSchemaV2 adds a field with a default to recordSchema.
const recordSchemaV2 = `{"type":"record","name":"R","fields":[{"name":"name","type":"string"},{"name":"n","type":["null","long"]},{"name":"seen","type":"long","default":0}]}`

func snap(k serializers.Kind) serializers.Snapshot { return serializers.Snapshot{Kind: k} }

// Operators is the model of every entry: the keyed operator with a TTL
// value state, a list state, an Avro value state, a map state and a timer
// service, and a non-keyed operator.
func Operators() []savepoint.Operator {
	week := ttl.New(7 * 24 * time.Hour)
	void := snap(serializers.KindVoid)
	return []savepoint.Operator{
		{
			UID: Operator, Name: "Hostile", Parallelism: 1, MaxParallelism: maxP, KeyHash: keygroup.Murmur3, Key: snap(serializers.KindString),
			States: []savepoint.KeyedState{
				{Name: "values", Kind: savepoint.Value, Namespace: void, Value: snap(serializers.KindInt64), TTL: &week},
				{Name: "lists", Kind: savepoint.List, Namespace: void, Value: snap(serializers.KindString)},
				{Name: "records", Kind: savepoint.Value, Namespace: void, Value: serializers.Snapshot{Kind: serializers.KindAvro, Schema: recordSchema}},
				{Name: "maps", Kind: savepoint.Map, Namespace: void, MapKey: snap(serializers.KindString), Value: snap(serializers.KindInt64)},
			},
			Timers: []savepoint.TimerService{{Name: "timers", Namespace: void}},
		},
		{UID: Other, Name: "Other", Parallelism: 1, MaxParallelism: maxP},
	}
}

func i64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// keyIn returns a key of key group kg.
func keyIn(kg int) []byte {
	for i := 0; ; i++ {
		if k := fmt.Appendf(nil, "k-%d", i); keygroup.Of(k, maxP) == kg {
			return k
		}
	}
}

// builder lays out one entry: segments go into data-000 one after another.
type builder struct {
	m    Metadata
	data []byte
}

func newBuilder() *builder {
	return &builder{m: Metadata{ID: 7, CreatedAt: CreatedAt, Operators: Operators(), Segments: make([][]Segment, 2)}, data: Preamble('D', formatVersion)}
}

// segment adds a segment of ref in kg made of blocks, with the index
// figures given; its raw bytes are summed from the blocks' headers.
func (b *builder) segment(ref, kg int, keys, entries uint64, minTS, maxTS int64, blocks ...[]byte) *Segment {
	s := Segment{KeyGroup: kg, Ref: ref, Offset: int64(len(b.data)), Keys: keys, Entries: entries, MinTS: minTS, MaxTS: maxTS}
	for _, blk := range blocks {
		s.Bytes += uint64(binary.BigEndian.Uint32(blk[5:]))
		b.data = append(b.data, blk...)
	}
	s.Length = int64(len(b.data)) - s.Offset
	b.m.Segments[0] = append(b.m.Segments[0], s)
	return &b.m.Segments[0][len(b.m.Segments[0])-1]
}

const lastModified = CreatedAt - 1000

// valid adds a whole segment to every state and the timer service, each
// in its own key group above 100, so that every entry holds all of them.
func (b *builder) valid() *builder {
	kg := func(ref int) (int, []byte) { return 101 + ref, keyIn(101 + ref) }
	g, k := kg(refValues)
	b.segment(refValues, g, 1, 1, lastModified, lastModified, RawBlock(Record(nil, k, nil, Item(append(i64(lastModified), i64(42)...)))))
	g, k = kg(refLists)
	b.segment(refLists, g, 1, 2, 0, 0, RawBlock(Record(nil, k, nil, Item([]byte("a")), Item([]byte("b")))))
	g, k = kg(refRecords)
	b.segment(refRecords, g, 1, 1, 0, 0, RawBlock(Record(nil, k, nil, Item(avroRecord("x", 5)))))
	g, k = kg(refMaps)
	b.segment(refMaps, g, 1, 2, 0, 0, RawBlock(Record(nil, k, nil, Item([]byte("a"), i64(1)), Item([]byte("b"), i64(2)))))
	g, k = kg(refTimers)
	b.segment(refTimers, g, 0, 1, CreatedAt+1000, CreatedAt+1000, RawBlock(Timer(nil, CreatedAt+1000, k, nil)))
	return b
}

// avroRecord encodes an R: the name, and the count in the union's long
// branch.
func avroRecord(name string, n int64) []byte {
	b := binary.AppendVarint(nil, int64(len(name)))
	b = append(b, name...)
	b = binary.AppendVarint(b, 1)
	return binary.AppendVarint(b, n)
}

// files encodes the entry: _metadata and data-000, segments sorted as the
// format wants them.
func (b *builder) files() map[string][]byte {
	for i := range b.m.Segments {
		slices.SortFunc(b.m.Segments[i], func(x, y Segment) int { return cmp.Or(cmp.Compare(x.KeyGroup, y.KeyGroup), cmp.Compare(x.Ref, y.Ref)) })
	}
	if len(b.m.Files) == 0 {
		b.m.Files = []File{{Name: "data-000", Size: int64(len(b.data))}}
	}
	return map[string][]byte{MetadataName: MetadataFile(b.m.Body(), formatVersion), "data-000": b.data}
}

// zeros is a zstd block that claims raw zero bytes, written by hand as
// the smallest frame that honestly holds them (RFC 8878): a frame header
// with the given window (a power of two), and run-length blocks of
// 128 KiB of zeros, four bytes each. Its records are an empty key, an
// empty namespace and no items.
func zeros(raw, window int) []byte {
	const maxBlock = 128 << 10
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 2 << 6} // magic; 4-byte content size, multi-segment
	log := 0
	for 1<<log < window {
		log++
	}
	frame = append(frame, byte(log-10)<<3)
	frame = binary.LittleEndian.AppendUint32(frame, uint32(raw))
	for left := raw; left > 0; left -= maxBlock {
		size := min(left, maxBlock)
		hdr := uint32(1<<1 | size<<3) // run-length block
		if left == size {
			hdr |= 1 // the last
		}
		frame = append(frame, byte(hdr), byte(hdr>>8), byte(hdr>>16), 0)
	}
	return Block(1, frame, raw)
}

// Corpus returns the hostile corpus, in name order.
func Corpus() []Entry {
	var out []Entry
	add := func(name string, level Level, state, about string, b *builder) *Entry {
		out = append(out, Entry{Name: name, Level: level, State: state, About: about, Files: b.files()})
		return &out[len(out)-1]
	}
	withSchema := func(schema string) *builder {
		b := newBuilder().valid()
		b.m.Operators[0].States[refRecords].Value.Schema = schema
		return b
	}

	// Schemas that would size buffers from the input.
	add("schema-fixed-2e40", LevelMetadata, "records", "an Avro fixed of 2^40 bytes", withSchema(`{"type":"fixed","name":"F","size":1099511627776}`))
	add("schema-nested-1001", LevelMetadata, "records", "Avro arrays nested 1001 deep",
		withSchema(strings.Repeat(`{"type":"array","items":`, 1001)+`"int"`+strings.Repeat("}", 1001)))
	add("schema-json-5000", LevelMetadata, "records", "an Avro union whose JSON nests 5000 deep",
		withSchema(strings.Repeat("[", 5000)+`"int"`+strings.Repeat("]", 5000)))

	// Names and files.
	b := newBuilder().valid()
	b.m.Files = []File{{Name: "../outside/data-000", Size: int64(len(b.data))}}
	add("name-dotdot", LevelMetadata, "values", "a data file named ../outside/data-000", b)
	b = newBuilder().valid()
	b.m.Segments[0][0].Length += 1 << 20
	add("segment-beyond-file", LevelMetadata, "values", "a segment that ends a mebibyte past its file", b)
	e := add("newer-version", LevelMetadata, "values", "a metadata file of format version 3", newBuilder().valid())
	e.Files[MetadataName] = MetadataFile(newBuilder().valid().m.Body(), 3)
	for _, l := range []struct{ name, to, about string }{
		{"link-outside", "../outside/data-000", "its data file a link to a whole data file outside the savepoint"},
		{"link-passwd", "/etc/passwd", "its data file a link to /etc/passwd"},
		{"link-devzero", "/dev/zero", "its data file a link to /dev/zero"},
	} {
		e := add(l.name, LevelMetadata, "values", l.about, newBuilder().valid())
		delete(e.Files, "data-000")
		e.Links = map[string]string{"data-000": l.to}
	}

	// Records that a copy used to pass on.
	b = newBuilder().valid()
	b.segment(refValues, 3, 1, 1, lastModified, lastModified, RawBlock(Record(nil, keyIn(4), nil, Item(append(i64(lastModified), i64(1)...)))))
	add("key-wrong-group", LevelFraming, "values", "a key stored in key group 3 that hashes to 4", b)
	b = newBuilder().valid()
	b.segment(refLists, 3, 1, 1, 0, 0, RawBlock(uv(nil, 1<<62)))
	add("key-length-2e62", LevelFraming, "lists", "a key length of 2^62", b)
	b = newBuilder().valid()
	b.segment(refLists, keygroup.Of(nil, maxP), 1, 1, 0, 0, RawBlock(RecordCount(nil, nil, nil, 1<<31, Item([]byte("a")))))
	add("item-count-2e31", LevelFraming, "lists", "a list record claiming 2^31 items", b)
	b = newBuilder().valid()
	b.m.Segments[0][0].Entries++
	add("index-more-entries", LevelFraming, "values", "an index entry that claims one entry more than its segment holds", b)
	b = newBuilder().valid()
	blk := ZstdBlock(Record(nil, keyIn(3), nil, Item([]byte("a")), Item([]byte("b"))))
	binary.BigEndian.PutUint32(blk[5:], binary.BigEndian.Uint32(blk[5:])-1)
	b.segment(refLists, 3, 1, 2, 0, 0, reseal(blk))
	add("zstd-longer-than-raw", LevelFraming, "lists", "a zstd payload one byte longer than its raw length", b)
	b = newBuilder().valid()
	z := zeros(256<<20, 8<<20)
	for kg := range 16 {
		b.segment(refLists, kg, 1, 1, 0, 0, z)
	}
	add("zeros-16x256m", LevelFraming, "lists", "16 segments of one zstd block each that claims 256 MiB of zeros", b)
	b = newBuilder().valid()
	b.segment(refLists, 3, 1, 1, 0, 0, zeros(32<<20, 16<<20))
	add("zstd-window-16m", LevelFraming, "lists", "a zstd frame with a window of 16 MiB", b)
	b = newBuilder().valid()
	b.segment(refMaps, 3, 1, 2, 0, 0, RawBlock(Record(nil, keyIn(3), nil, Item([]byte("b"), i64(1)), Item([]byte("a"), i64(2)))))
	add("map-keys-unsorted", LevelFraming, "maps", "map keys out of order", b)
	b = newBuilder().valid()
	b.segment(refValues, 3, 1, 1, lastModified, lastModified, RawBlock(Record(nil, keyIn(3), nil, Item([]byte{1, 2, 3}))))
	add("ttl-value-short", LevelFraming, "values", "a TTL value of 3 bytes", b)
	b = newBuilder().valid()
	k3 := keyIn(3)
	b.segment(refTimers, 3, 0, 2, CreatedAt, CreatedAt+1, RawBlock(Timer(Timer(nil, CreatedAt+1, k3, nil), CreatedAt, k3, nil)))
	add("timers-unsorted", LevelFraming, "timers", "timers out of order", b)

	// Values that frame but do not decode.
	b = newBuilder().valid()
	b.segment(refValues, 3, 1, 1, lastModified, lastModified, RawBlock(Record(nil, keyIn(3), nil, Item(append(i64(lastModified), 1, 2, 3)))))
	add("value-int64-3-bytes", LevelValues, "values", "an int64 value of 3 bytes", b)
	b = newBuilder().valid()
	b.segment(refRecords, 3, 1, 1, 0, 0, RawBlock(Record(nil, keyIn(3), nil, Item([]byte{4, 0xff, 0xfe, 0, 0}))))
	add("avro-string-not-utf8", LevelValues, "records", "an Avro string that is not UTF-8", b)
	b = newBuilder().valid()
	b.segment(refRecords, 3, 1, 1, 0, 0, RawBlock(Record(nil, keyIn(3), nil, Item([]byte{2, 'x', 8}))))
	add("avro-union-branch-4", LevelValues, "records", "an Avro union branch that does not exist", b)

	// What must be read in bounded memory.
	b = newBuilder().valid()
	const elements = 4 << 20
	k3 = keyIn(3)
	list := RecordCount(nil, k3, nil, elements, bytes.Repeat([]byte{0}, elements))
	b.segment(refLists, 3, 1, elements, 0, 0, ZstdBlock(list))
	add("one-key-4m-elements", LevelValid, "lists", "one key whose list has 4 Mi empty strings, in one zstd block", b)
	return out
}

// reseal recomputes a block's CRC after its header changed.
func reseal(blk []byte) []byte {
	body := blk[:len(blk)-4]
	return binary.BigEndian.AppendUint32(body[:len(body):len(body)], crc.Checksum(body))
}

// Valid returns a whole savepoint of the corpus's operators: one segment of
// every state and of the timer service, in uncompressed blocks.
func Valid() map[string][]byte { return newBuilder().valid().files() }
