package snapshotfmt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/stateproc/stateproc/internal/crc"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
)

// FuzzMetadataBody feeds bytes to the metadata body decoder below the CRC.
// What it accepts must encode back to the same bytes (the body encoding is
// canonical), and must open and verify against real data files without a
// panic.
func FuzzMetadataBody(f *testing.F) {
	data := flipSavepoint(f)
	example := newMemDir()
	writeSavepoint(f, example, exampleMeta(), nil, Options{})
	for _, d := range []*memDir{data, smallSavepoint(f), example} {
		b := d.files[MetadataName]
		f.Add(b[metadataHeaderLen : len(b)-4])
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, body []byte) {
		m, idx, err := decodeMetadataBody(body, NewestVersion)
		if err != nil {
			var e *savepoint.Error
			if !errors.As(err, &e) || !errors.Is(err, ErrCorrupt) || e.File != MetadataName {
				t.Fatalf("error %v is not a located ErrCorrupt", err)
			}
			return
		}
		if again := encodeMetadataBody(m, idx); !bytes.Equal(again, body) {
			t.Fatalf("accepted body encodes differently:\n in %x\nout %x", body, again)
		}
		if err := checkMetadata(m); err != nil {
			t.Fatalf("reader accepted metadata the writer refuses: %v", err)
		}
		d := data.clone()
		d.files[MetadataName] = metadataFile(body)
		r, err := Open(ctx, d)
		if err != nil {
			return
		}
		verify(ctx, r)
		r.Close()
	})
}

// fuzzShape decodes the fuzzer's choice of record layout: kind 0 is a timer
// service. Every key hashes to key group 0 of a max parallelism of 1.
func fuzzShape(kind uint8, ttl bool) shape {
	s := shape{kind: savepoint.Kind(kind % 6), ttl: ttl, hash: keygroup.Murmur3, maxP: 1}
	if s.kind == 0 {
		s.ttl = false
	}
	return s
}

// encodeBlock writes entries as one block payload.
func encodeBlock(t testing.TB, s shape, entries []savepoint.Entry) ([]byte, savepoint.Stats) {
	var payload []byte
	rw := newRecordWriter(maxBlockRaw, func(blk []byte) error {
		payload = append(payload, blk[blockHeaderLen:]...)
		return nil
	})
	rw.reset(s)
	for i := range entries {
		if err := rw.add(&entries[i]); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	if err := rw.flush(); err != nil {
		t.Fatal(err)
	}
	return payload, rw.stats()
}

// FuzzBlockRecords decodes a block payload as the records of each kind of
// state and of a timer service. What the reader accepts, the writer must
// accept too and encode to the same bytes, with the same index numbers.
func FuzzBlockRecords(f *testing.F) {
	// At a max parallelism of 1 every key is in key group 0, so the test
	// data's segments make valid payloads as they are.
	for _, sd := range testData(40) {
		ttl := sd.ref == 0 || sd.ref == 2
		kind := uint8(sd.ref + 1)
		if sd.ref == 4 {
			kind = 0
		}
		payload, _ := encodeBlock(f, fuzzShape(kind, ttl), sd.entries)
		f.Add(kind, ttl, payload)
		if sd.ref == 3 {
			f.Add(uint8(savepoint.Aggregating), false, payload)
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, ttl bool, payload []byte) {
		s := fuzzShape(kind, ttl)
		var e savepoint.Entry
		rr := newRecordReader(s, &e)
		rr.startBlock(payload)
		var entries []savepoint.Entry
		for rr.next() {
			entries = append(entries, savepoint.Entry{
				Key: bytes.Clone(e.Key), Namespace: bytes.Clone(e.Namespace), MapKey: bytes.Clone(e.MapKey),
				Value: bytes.Clone(e.Value), Timestamp: e.Timestamp,
			})
		}
		if _, err := rr.failure(); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if len(payload) == 0 {
			return
		}
		again, stats := encodeBlock(t, s, entries)
		if !bytes.Equal(again, payload) {
			t.Fatalf("accepted payload encodes differently:\n in %x\nout %x", payload, again)
		}
		want := savepoint.Stats{Keys: stats.Keys, Entries: stats.Entries, Bytes: stats.Bytes, MinTimestamp: stats.MinTimestamp, MaxTimestamp: stats.MaxTimestamp}
		if err := rr.check(&want); err != nil {
			t.Fatalf("reader and writer count differently: %v", err)
		}
	})
}

// FuzzBlock reads one block whose CRC is right, so that the header checks
// and zstd decompression see hostile bytes: no panic, and a zstd payload
// never decodes to more than its raw length.
func FuzzBlock(f *testing.F) {
	enc, err := newZstdEncoder()
	if err != nil {
		f.Fatal(err)
	}
	raw := bytes.Repeat([]byte("category-counts "), 64)
	f.Add(uint8(CodecZstd), uint16(len(raw)), enc.EncodeAll(raw, nil))
	f.Add(uint8(CodecNone), uint16(5), []byte("hello"))
	f.Fuzz(func(t *testing.T, codec uint8, rawLen uint16, payload []byte) {
		b := []byte{codec}
		b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
		b = binary.BigEndian.AppendUint32(b, uint32(rawLen))
		b = append(b, payload...)
		b = binary.BigEndian.AppendUint32(b, crc.Checksum(b))
		file := append(appendPreamble(nil, typeData), b...)
		seg := savepoint.Segment{File: "d", Offset: preambleLen, Length: int64(len(b))}
		br := newBlockReader(memFile{bytes.NewReader(file)}, "d", &seg)
		if err := br.next(); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		out, err := br.payload()
		if err == nil && len(out) != int(rawLen) {
			t.Fatalf("payload of %d bytes, the header says %d", len(out), rawLen)
		}
		if err := br.next(); err != io.EOF {
			t.Fatalf("after the only block: %v", err)
		}
	})
}
