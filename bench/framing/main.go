// Command framing is the physical floor of a scan of a stateproc
// savepoint: it reads every segment the index lists with pread, in the
// reader's 256 KiB windows, checks each block's CRC-32C and header, and
// walks the uvarint framing of every record and item, and does nothing
// else: no ordering, key-group, count or histogram check. `inspect --scan`
// is measured against it:
//
//	go build -o /tmp/framing ./bench/framing
//	go run ./bench/ratio --baseline 'cat DIR/* > /dev/null' -- /tmp/framing DIR
//
// It reads on as many workers as inspect --scan does (one per core), one
// segment at a time each, and prints the entries, blocks and bytes it
// walked, which must be the index's. A block it cannot walk (a bad CRC,
// framing that runs past the payload, a compressed block, which this loop
// does not decompress) ends it with exit status 1.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/stateproc/stateproc/internal/crc"
	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: framing SAVEPOINT_DIR")
		os.Exit(2)
	}
	start := time.Now()
	t, err := walkSavepoint(context.Background(), os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "framing:", err)
		os.Exit(1)
	}
	s := time.Since(start).Seconds()
	fmt.Printf("%d entries in %d segments, %d blocks, %d payload bytes, in %.3f s: %.1f M entries/s\n",
		t.entries, t.segments, t.blocks, t.bytes, s, float64(t.entries)/s/1e6)
}

// totals are what the walk found, summed over the workers.
type totals struct {
	segments, blocks, entries, bytes uint64
}

// The block layout of FORMAT.md: u8 codec, u32 stored length, u32 raw
// length, the payload, a CRC-32C of all of it.
const (
	headerLen = 9
	crcLen    = 4
	readAhead = 256 << 10
)

func walkSavepoint(ctx context.Context, dir string) (totals, error) {
	r, err := snapshotfmt.OpenLazily(ctx, storage.LocalDir(dir))
	if err != nil {
		return totals{}, err
	}
	defer r.Close()
	segs, err := savepoint.AllSegments(ctx, r)
	if err != nil {
		return totals{}, err
	}
	files := map[string]*os.File{}
	for _, name := range r.DataFiles() {
		f, err := os.Open(dir + "/" + name)
		if err != nil {
			return totals{}, err
		}
		defer f.Close()
		files[name] = f
	}
	m := r.Metadata()
	n := workers.Default()
	walkers := make([]walker, n)
	var sum totals
	var segCount atomic.Uint64
	err = workers.Run(ctx, len(segs), n, func(_ context.Context, w, i int) error {
		seg := &segs[i]
		wk := &walkers[w]
		wk.timer = seg.Ref.Timer
		wk.mapState = !seg.Ref.Timer && m.KeyedState(seg.Ref).Kind == savepoint.Map
		before := wk.t.entries
		if err := wk.segment(files[seg.File], seg.Offset, seg.Length); err != nil {
			return fmt.Errorf("%s, key group %d: %w", seg.File, seg.KeyGroup, err)
		}
		if got := wk.t.entries - before; got != seg.Entries {
			return fmt.Errorf("%s, key group %d: %d entries, the index says %d", seg.File, seg.KeyGroup, got, seg.Entries)
		}
		segCount.Add(1)
		return nil
	})
	if err != nil {
		return totals{}, err
	}
	for _, wk := range walkers {
		sum.blocks += wk.t.blocks
		sum.entries += wk.t.entries
		sum.bytes += wk.t.bytes
	}
	sum.segments = segCount.Load()
	return sum, nil
}

// walker is one worker's: its window and counts.
type walker struct {
	win             []byte
	winAt           int64
	timer, mapState bool
	t               totals
}

var errFraming = errors.New("framing runs past the block's payload")

// segment walks the blocks of the segment at off, length n, in f.
func (w *walker) segment(f *os.File, off, n int64) error {
	end := off + n
	w.win, w.winAt = w.win[:0], 0
	for pos := off; pos < end; {
		hdr, err := w.bytesAt(f, pos, headerLen, end)
		if err != nil {
			return err
		}
		total := headerLen + int64(binary.BigEndian.Uint32(hdr[1:])) + crcLen
		blk, err := w.bytesAt(f, pos, total, end)
		if err != nil {
			return err
		}
		body := blk[:total-crcLen]
		if binary.BigEndian.Uint32(blk[total-crcLen:]) != crc.Checksum(body) {
			return fmt.Errorf("offset %d: block checksum mismatch", pos)
		}
		if snapshotfmt.Codec(blk[0]) != snapshotfmt.CodecNone {
			return fmt.Errorf("offset %d: a compressed block; the framing loop walks uncompressed savepoints", pos)
		}
		payload := body[headerLen:]
		items, err := w.walk(payload)
		if err != nil {
			return fmt.Errorf("offset %d: %w", pos, err)
		}
		w.t.blocks++
		w.t.entries += items
		w.t.bytes += uint64(len(payload))
		pos += total
	}
	return nil
}

// bytesAt returns the n bytes of f at pos, from the window when it holds
// them, else from a new window read at pos, of at least readAhead bytes
// unless the segment ends first at end.
func (w *walker) bytesAt(f *os.File, pos, n, end int64) ([]byte, error) {
	if rel := pos - w.winAt; rel >= 0 && rel+n <= int64(len(w.win)) {
		return w.win[rel : rel+n], nil
	}
	if n > end-pos {
		return nil, fmt.Errorf("offset %d: %d bytes past the segment's end", pos, n)
	}
	size := max(n, min(end-pos, readAhead))
	if int64(cap(w.win)) < size {
		w.win = make([]byte, size)
	}
	w.win, w.winAt = w.win[:size], pos
	if _, err := f.ReadAt(w.win, pos); err != nil {
		return nil, fmt.Errorf("offset %d: %w", pos, err)
	}
	return w.win[:n], nil
}

// walk steps over the records of one payload and returns the items in it.
func (w *walker) walk(b []byte) (uint64, error) {
	var items uint64
	i := 0
	for i < len(b) {
		if w.timer {
			if i = skip(b, i+8); i < 0 {
				return items, errFraming
			}
			if i = skip(b, i); i < 0 {
				return items, errFraming
			}
			items++
			continue
		}
		if i = skip(b, i); i < 0 {
			return items, errFraming
		}
		if i = skip(b, i); i < 0 {
			return items, errFraming
		}
		count, k := binary.Uvarint(b[i:])
		if k <= 0 || count > uint64(len(b)-i-k) {
			return items, errFraming
		}
		i += k
		for range count {
			if w.mapState {
				if i = skip(b, i); i < 0 {
					return items, errFraming
				}
			}
			if i = skip(b, i); i < 0 {
				return items, errFraming
			}
		}
		items += count
	}
	return items, nil
}

// skip returns the offset after the length-prefixed field at b[i:], or -1
// when it runs past b. A one-byte length, the common case, takes no call.
func skip(b []byte, i int) int {
	if i < len(b) && b[i] < 0x80 {
		if j := i + 1 + int(b[i]); j <= len(b) {
			return j
		}
		return -1
	}
	return skipLong(b, i)
}

func skipLong(b []byte, i int) int {
	if i > len(b) {
		return -1
	}
	n, k := binary.Uvarint(b[i:])
	if k <= 0 || n > uint64(len(b)-i-k) {
		return -1
	}
	return i + k + int(n)
}
