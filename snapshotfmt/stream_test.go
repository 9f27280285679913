package snapshotfmt

import (
	"bytes"
	"context"
	"encoding/binary"
	"runtime"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/stateproc/stateproc/internal/crc"
	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/savepoint"
)

// TestStreamedBlocksReadAsWhole writes the same state in blocks small
// enough to decompress whole and in blocks large enough to stream through
// a window, whose refills then fall inside records, items and timers, and
// reads both the same. Copying the streamed segments checks their records
// on the way.
func TestStreamedBlocksReadAsWhole(t *testing.T) {
	ctx := context.Background()
	data := testData(3000)
	// A value that outgrows the window once: the window grows to hold it.
	big := bytes.Repeat([]byte("v"), 3*streamWindow)
	for i := range data {
		if data[i].ref == 1 && len(data[i].entries) > 0 {
			data[i].entries[0].Value = big
			break
		}
	}
	small, large := newMemDir(), newMemDir()
	writeSavepoint(t, small, testMeta(), data, Options{Compression: CodecZstd})
	writeSavepoint(t, large, testMeta(), data, Options{Compression: CodecZstd, BlockSize: 8 * streamWindow})
	rs, err := Open(ctx, small)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := Open(ctx, large)
	if err != nil {
		t.Fatal(err)
	}
	streamed := 0
	for _, seg := range opSegments(rl, 0) {
		br := newBlockReader(ctx, rl.files[seg.File].f, seg.File, &seg)
		for br.next() == nil {
			if br.codec == CodecZstd && br.rawLen > streamAbove {
				streamed++
			}
		}
		br.release()
	}
	if streamed == 0 {
		t.Fatal("no block is large enough to be streamed")
	}
	got, want := readAll(t, rl, 0), readAll(t, rs, 0)
	if len(got) != len(want) {
		t.Fatalf("%d segments streamed, %d whole", len(got), len(want))
	}
	for i := range want {
		if len(got[i].entries) != len(want[i].entries) {
			t.Fatalf("segment %d: %d entries streamed, %d whole", i, len(got[i].entries), len(want[i].entries))
		}
		for j := range want[i].entries {
			if !sameEntry(&got[i].entries[j], &want[i].entries[j]) {
				t.Fatalf("segment %d entry %d differs when streamed", i, j)
			}
		}
	}
	if err := verify(ctx, rl); err != nil {
		t.Fatal(err)
	}

	w, err := NewWriter(newMemDir(), testMeta(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := w.CreateDataFile(ctx, "d")
	for _, seg := range opSegments(rl, 0) {
		if err := f.CopySegment(ctx, rl, seg, seg.Ref, seg.KeyGroup); err != nil {
			t.Fatalf("copy of a streamed segment: %v", err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// zeroBlock is a zstd block whose payload claims raw zero bytes: a few
// kilobytes stored, and records that are all empty keys with no items.
func zeroBlock(t testing.TB, raw int) []byte {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	b := []byte{byte(CodecZstd), 0, 0, 0, 0}
	b = binary.BigEndian.AppendUint32(b, uint32(raw))
	b = enc.EncodeAll(make([]byte, raw), b)
	binary.BigEndian.PutUint32(b[1:], uint32(len(b)-blockHeaderLen))
	return binary.BigEndian.AppendUint32(b, crc.Checksum(b))
}

// withBlocks returns the small savepoint with the first n segments of its
// keyed operator replaced by the given block each, under valid checksums.
func withBlocks(t *testing.T, blocks [][]byte) *memDir {
	d, m, idx := decodedSmall(t)
	segs := idx.segments[0]
	if len(segs) < len(blocks) {
		t.Fatalf("the small savepoint has %d segments, %d wanted", len(segs), len(blocks))
	}
	// One data file holding the crafted segments, then the others as they
	// were.
	file := appendPreamble(nil, typeData)
	for i := range segs {
		var seg []byte
		if i < len(blocks) {
			seg = blocks[i]
			segs[i].Bytes = uint64(binary.BigEndian.Uint32(blocks[i][5:]))
		} else {
			seg = d.files[segs[i].File][segs[i].Offset : segs[i].Offset+segs[i].Length]
		}
		segs[i].File, segs[i].Offset, segs[i].Length = "crafted", int64(len(file)), int64(len(seg))
		file = append(file, seg...)
	}
	for op := 1; op < len(idx.segments); op++ {
		if len(idx.segments[op]) > 0 {
			t.Fatal("the small savepoint has segments outside its first operator")
		}
	}
	out := newMemDir()
	out.files["crafted"] = file
	idx.files = []dataFile{{name: "crafted", size: int64(len(file))}}
	out.files[MetadataName] = metadataFile(encodeMetadataBody(m, idx))
	return out
}

// TestClaimedZerosCostLittle: segments of one small zstd block each, each
// claiming the largest raw length there is, read at once by as many
// workers: each fails at its first record, and what the readers allocate
// is nowhere near a block's claimed size, let alone one per worker.
func TestClaimedZerosCostLittle(t *testing.T) {
	ctx := context.Background()
	const n = 8
	blocks := make([][]byte, n)
	blocks[0] = zeroBlock(t, maxBlockRaw)
	for i := range blocks {
		blocks[i] = blocks[0]
	}
	r, err := Open(ctx, withBlocks(t, blocks))
	if err != nil {
		t.Fatal(err)
	}
	segs := opSegments(r, 0)[:n]
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	errs := make([]error, n)
	if err := workers.Run(ctx, n, n, func(ctx context.Context, _, i int) error {
		it := r.iterate(ctx, segs[i])
		defer it.Close()
		for it.Next() {
		}
		errs[i] = it.Err()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	for _, err := range errs {
		wantCorrupt(t, err, "record with no items")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 128<<20 {
		t.Errorf("reading %d blocks that claim %d bytes each allocated %d bytes", n, maxBlockRaw, got)
	}
}

// TestStreamedBlockLengthsChecked: a streamed payload must decompress to
// exactly its raw length, and its frame's window must be one a reader
// keeps, as a payload decompressed whole must.
func TestStreamedBlockLengthsChecked(t *testing.T) {
	const raw = 2 * streamAbove
	zeros := zeroBlock(t, raw)
	frame := zeros[blockHeaderLen : len(zeros)-blockCRCLen]
	for _, tc := range []struct {
		name    string
		rawLen  int
		payload func() []byte
		want    string
	}{
		{"header says more than the frame", raw + 1, func() []byte { return frame }, "frame of"},
		{"header says less than the frame", raw - 1, func() []byte { return frame }, "frame of"},
		{"frame cut short", raw, func() []byte { return frame[:len(frame)-8] }, "decompress"},
		{"a second frame", raw, func() []byte {
			extra := zeroBlock(t, 10)
			return append(bytes.Clone(frame), extra[blockHeaderLen:len(extra)-blockCRCLen]...)
		}, "more than"},
		{"window beyond the limit", 4 * maxZstdWindow, func() []byte {
			enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(2*maxZstdWindow))
			if err != nil {
				t.Fatal(err)
			}
			defer enc.Close()
			return enc.EncodeAll(make([]byte, 4*maxZstdWindow), nil)
		}, "window of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.payload()
			b := []byte{byte(CodecZstd)}
			b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
			b = binary.BigEndian.AppendUint32(b, uint32(tc.rawLen))
			b = append(b, p...)
			b = binary.BigEndian.AppendUint32(b, crc.Checksum(b))
			file := append(appendPreamble(nil, typeData), b...)
			seg := savepoint.Segment{File: "d", Offset: preambleLen, Length: int64(len(b))}
			br := newBlockReader(context.Background(), memFile{bytes.NewReader(file)}, "d", &seg)
			defer br.release()
			if err := br.next(); err != nil {
				t.Fatal(err)
			}
			buf, more, err := br.payload()
			for err == nil && more > 0 {
				buf, more, err = br.refill(buf, len(buf), int(min(more, streamWindow)))
			}
			if err == nil {
				err = br.finish()
			}
			wantCorrupt(t, err, tc.want)
		})
	}
}

// reseal recomputes a block's CRC after its header changed.
func reseal(b []byte) []byte {
	body := b[:len(b)-blockCRCLen]
	return binary.BigEndian.AppendUint32(body[:len(body):len(body)], crc.Checksum(body))
}

// TestBudgetWaitsOnlyWhenHoldingNothing: a worker that holds nothing else
// waits for its share, and gets it once another gives it back; a reader of
// a worker that holds some already, or one outside a worker, does not
// wait.
func TestBudgetWaitsOnlyWhenHoldingNothing(t *testing.T) {
	b := newBudget(100)
	ctx := context.Background()
	outside := grant{b: b}
	if err := outside.reserve(ctx, 80); err != nil || outside.counted != 80 {
		t.Fatalf("reserve outside a worker: counted %d, %v", outside.counted, err)
	}
	over := grant{b: b}
	if err := over.reserve(ctx, 50); err != nil || over.counted != 0 || over.size != 50 {
		t.Fatalf("reserve outside a worker over the budget: counted %d size %d, %v", over.counted, over.size, err)
	}
	var wg sync.Mutex
	wg.Lock()
	done := make(chan int64)
	go workers.Run(ctx, 1, 1, func(ctx context.Context, _, _ int) error {
		g := grant{b: b}
		wg.Unlock()
		err := g.reserve(ctx, 60) // waits for outside
		// Holding some, a second reader goes over the budget rather than
		// wait on the first.
		second := grant{b: b}
		if err == nil {
			err = second.reserve(ctx, 50)
		}
		if second.counted != 0 || second.size != 50 {
			t.Errorf("a second reader of a worker: counted %d size %d", second.counted, second.size)
		}
		// Growing past the budget, the first waits for all of it.
		if err == nil {
			err = g.reserve(ctx, 200)
		}
		if err != nil {
			t.Error(err)
		}
		done <- g.counted
		g.release()
		second.release()
		return nil
	})
	wg.Lock()
	select {
	case <-done:
		t.Fatal("a worker went over the budget instead of waiting")
	default:
	}
	outside.release()
	if got := <-done; got != 100 {
		t.Errorf("the worker holds %d of the budget, want all 100", got)
	}
	if !b.sem.TryAcquire(100) {
		t.Error("the budget is not whole once every grant is released")
	}
}
