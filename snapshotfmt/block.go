package snapshotfmt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/stateproc/stateproc/internal/crc"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// Codec is the compression of a block's payload.
type Codec uint8

const (
	CodecNone Codec = 0
	CodecZstd Codec = 1
)

// A block is: u8 codec, u32 stored length, u32 raw length, the payload, and
// a CRC over all of it.
const (
	blockHeaderLen = 9
	blockCRCLen    = 4
	blockOverhead  = blockHeaderLen + blockCRCLen

	// maxBlockRaw bounds what a reader allocates for one block.
	maxBlockRaw = 256 << 20
	// maxZstdExpansion is more than any zstd frame can expand: its smallest
	// block (a 3-byte header and one byte, run-length encoded) yields at most
	// 128 KiB. A raw length above it cannot be honest, so it is refused
	// before anything is allocated for it.
	maxZstdExpansion = 32 << 10
)

// zstdDecoder is shared: DecodeAll is safe for concurrent use, and its cap
// limit stops the output at the raw length the block declares.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(maxBlockRaw),
		zstd.WithDecoderMaxWindow(maxZstdWindow),
		zstd.WithDecodeAllCapLimit(true))
})

// newZstdEncoder returns an encoder with fixed settings, so that the same
// payload always compresses to the same bytes. One goroutine: a data file's
// blocks are compressed in order by the goroutine that writes them.
func newZstdEncoder() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil,
		zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		// The block CRC already covers the compressed bytes.
		zstd.WithEncoderCRC(false))
}

// sealBlock turns blk, which holds blockHeaderLen reserved bytes and then the
// raw payload, into a complete block. It compresses with enc (when not nil)
// into scratch if that is smaller, and returns the block's bytes, which alias
// blk or scratch.
func sealBlock(blk, scratch []byte, enc *zstd.Encoder) (block, newScratch []byte) {
	raw := blk[blockHeaderLen:]
	out, codec := blk, CodecNone
	if enc != nil {
		scratch = enc.EncodeAll(raw, append(scratch[:0], blk[:blockHeaderLen]...))
		if len(scratch)-blockHeaderLen < len(raw) {
			out, codec = scratch, CodecZstd
		}
	}
	out[0] = byte(codec)
	binary.BigEndian.PutUint32(out[1:], uint32(len(out)-blockHeaderLen))
	binary.BigEndian.PutUint32(out[5:], uint32(len(raw)))
	out = binary.BigEndian.AppendUint32(out, crc.Checksum(out))
	if codec == CodecZstd {
		scratch = out
	}
	return out, scratch
}

// readAhead is how much of a segment a blockReader reads at once, so that a
// segment costs one read per 256 KiB rather than two per block. It is well
// above DefaultBlockSize so that a window holds several whole blocks; a
// block that does not fit gets a window of its own size.
const readAhead = 256 << 10

const (
	// pooledRawLimit is the largest decompression buffer a reader keeps
	// from block to block, and takes outside BlockMemory.
	pooledRawLimit = 4 * DefaultBlockSize
	// streamAbove is the raw length above which a compressed block is
	// decompressed as a stream, a window at a time, so that what a block
	// costs is its largest item rather than the raw length its header
	// claims: zstd turns a few kilobytes into the largest block allowed.
	streamAbove = 1 << 20
	// streamWindow is the window a streamed block is read through at
	// first; it grows to hold a larger item.
	streamWindow = 1 << 20
	// maxZstdWindow is the largest zstd window (a single-segment frame's
	// content size) a reader keeps: the 8 MB that RFC 8878 asks every
	// decoder to support, and the most the writer's encoder uses.
	maxZstdWindow = 8 << 20
)

// windows recycles read windows between iterators: a scan opens one
// iterator per (key group, state), and fresh windows for each made the
// garbage collector run, and its write barriers cost, more than the
// decoding.
var windows = sync.Pool{New: func() any { b := make([]byte, 0, readAhead); return &b }}

// blockReader reads the blocks of one segment in order. It reads the file in
// windows; a block lies whole in the window while it is the current one.
// From a file that suits larger reads (an object in a bucket, see
// storage.ReadSize), it reads the segment ahead of its blocks through a
// storage.Prefetcher, one read in flight while the blocks of the last are
// decoded, and its window holds what is left of the last read and the next.
// Buffers beyond its pooled ones are counted against BlockMemory while the
// block they serve is current.
type blockReader struct {
	f     storage.File
	name  string
	kg    int
	pos   int64 // file offset of the next block
	end   int64
	win   []byte // file bytes from winAt on
	winAt int64
	// ctx and ahead are for reading ahead: the read size, 0 for a local
	// file; pf, unless the caller gives the segment's reads (a walk's),
	// is started at the first window. It is closed with the reader.
	ctx    context.Context
	ahead  int64
	pf     *storage.Prefetcher
	cur    []byte // the current block as stored: header, payload, CRC
	raw    []byte // its decompressed payload, when compressed
	codec  Codec
	rawLen int
	// pooled and pooledRaw are the pools' buffers that win and raw started
	// from, returned by release.
	pooled, pooledRaw *[]byte
	mem               grant
	// stream decompresses a streamed block; streamLeft counts the raw
	// bytes it has not given yet.
	stream     *zstd.Decoder
	streamLeft int64
}

// raws recycles the buffers that compressed blocks decompress into, as
// windows recycles read windows.
var raws = sync.Pool{New: func() any { b := make([]byte, 0, DefaultBlockSize); return &b }}

// recycle returns buf, grown from the pool's *p, to pool, unless it has
// grown beyond limit.
func recycle(pool *sync.Pool, p *[]byte, buf []byte, limit int) {
	if c := cap(buf); c <= limit {
		*p = buf[:0]
		pool.Put(p)
	}
}

// release gives the read window back to the pool; the blocks and entries
// read from it are no longer valid.
func (br *blockReader) release() {
	br.endBlock()
	if br.pooled != nil {
		recycle(&windows, br.pooled, br.win, readAhead)
	}
	if br.pooledRaw != nil {
		recycle(&raws, br.pooledRaw, br.raw, pooledRawLimit)
	}
	if br.pf != nil {
		br.pf.Close()
	}
	br.pf = nil
	if br.ahead > 0 {
		// A window read ahead is a prefetched chunk's buffer, or one grown
		// from it, and nothing else holds it.
		storage.ReleaseChunk(br.win)
	}
	br.pooled, br.pooledRaw, br.win, br.cur, br.raw = nil, nil, nil, nil, nil
}

// endBlock lets go of what only the current block needed: the buffers
// counted against BlockMemory, and the stream.
func (br *blockReader) endBlock() {
	if br.stream != nil {
		br.stream.Close()
		br.stream, br.streamLeft = nil, 0
	}
	// A window read ahead from a bucket holds the next blocks and is the
	// prefetcher's, bounded by its budget: it stays.
	if br.ahead == 0 && cap(br.win) > readAhead {
		br.win = nil
		if br.pooled != nil {
			br.win = (*br.pooled)[:0]
		}
	}
	if cap(br.raw) > pooledRawLimit {
		br.raw = nil
		if br.pooledRaw != nil {
			br.raw = (*br.pooledRaw)[:0]
		}
	}
	br.mem.release()
}

func newBlockReader(ctx context.Context, f storage.File, name string, seg *savepoint.Segment) *blockReader {
	return &blockReader{f: f, name: name, kg: seg.KeyGroup, pos: seg.Offset, end: seg.Offset + seg.Length,
		ctx: ctx, ahead: storage.ReadSize(f), mem: grant{b: blockMemory}}
}

func (br *blockReader) fail(off int64, err error) error { return at(br.name, br.kg, off, err) }

// window returns n bytes of the file at br.pos, which the caller has checked
// lie within the segment. Reading replaces the window, so it is called only
// once the previous block is no longer used.
func (br *blockReader) window(n int) ([]byte, error) {
	if off := br.pos - br.winAt; br.pos >= br.winAt && off+int64(n) <= int64(len(br.win)) {
		return br.win[off : off+int64(n)], nil
	}
	if br.ahead > 0 {
		return br.windowAhead(n)
	}
	size := max(n, int(min(br.end-br.pos, readAhead)))
	if br.win == nil {
		br.pooled = windows.Get().(*[]byte)
		br.win = *br.pooled
	}
	if size > cap(br.win) {
		if err := br.mem.reserve(br.ctx, br.mem.size+int64(size)); err != nil {
			return nil, err
		}
	}
	br.win, br.winAt = grow(br.win, size), br.pos
	if err := readAt(br.f, br.name, br.kg, br.win, br.pos); err != nil {
		br.win = br.win[:0]
		return nil, err
	}
	return br.win[:n], nil
}

// windowAhead is window for a file read ahead: the window becomes the
// bytes of the last read from br.pos on, then those of the reads that
// follow until it holds n bytes. The first call starts the reads.
func (br *blockReader) windowAhead(n int) ([]byte, error) {
	if br.pf == nil {
		br.pf = storage.Prefetch(br.ctx, []storage.Range{{File: br.f, Off: br.pos, Len: br.end - br.pos}},
			storage.PrefetchOptions{InFlight: 1, ChunkSize: br.ahead, Budget: 2 * br.ahead})
		br.win, br.winAt = br.win[:0], br.pos
	}
	// What the window holds from br.pos on moves to its front.
	keep := 0
	if off := br.pos - br.winAt; off >= 0 && off < int64(len(br.win)) {
		keep = copy(br.win, br.win[off:])
	}
	br.win, br.winAt = br.win[:keep], br.pos
	for len(br.win) < n {
		c, err := br.pf.Next()
		if err != nil {
			if err == io.EOF {
				err = corruptf("truncated: the file ends within the segment")
			}
			return nil, br.fail(br.winAt+int64(len(br.win)), err)
		}
		if at := br.winAt + int64(len(br.win)); c.Off != at {
			// A prefetcher out of step with the segment read.
			return nil, br.fail(at, fmt.Errorf("read ahead from offset %d, not %d", c.Off, at))
		}
		if len(br.win) == 0 {
			// The read's own buffer: the prefetcher counts it free once
			// the next read is taken, which is when this window is
			// replaced.
			br.win = c.Data
			continue
		}
		br.win = append(br.win, c.Data...)
	}
	return br.win[:n], nil
}

// next reads the next block and verifies its CRC and header. It returns
// io.EOF when the segment ends exactly after the previous block.
func (br *blockReader) next() error {
	br.endBlock()
	left := br.end - br.pos
	if left == 0 {
		return io.EOF
	}
	if left < blockOverhead {
		return br.fail(br.pos, corruptf("truncated block: %d bytes left in the segment, a block takes at least %d", left, blockOverhead))
	}
	hdr, err := br.window(blockHeaderLen)
	if err != nil {
		return err
	}
	stored := int64(binary.BigEndian.Uint32(hdr[1:]))
	if stored > left-blockOverhead {
		return br.fail(br.pos+1, corruptf("block length %d beyond the %d bytes remaining in the segment", stored, left-blockOverhead))
	}
	total := blockOverhead + int(stored)
	if br.cur, err = br.window(total); err != nil {
		return err
	}
	if err := checkBlock(br.cur); err != nil {
		return br.fail(br.pos, err)
	}
	br.codec = Codec(br.cur[0])
	br.rawLen = int(binary.BigEndian.Uint32(br.cur[5:]))
	br.pos += int64(total)
	return nil
}

// blockAt is the file offset of the current block.
func (br *blockReader) blockAt() int64 { return br.pos - int64(len(br.cur)) }

func (br *blockReader) stored() []byte { return br.cur[blockHeaderLen : len(br.cur)-blockCRCLen] }

// payload returns the current block's raw payload, decompressed if need
// be: all of it, or for a streamed block the start of it, with more
// saying how many bytes follow, which refill gives.
func (br *blockReader) payload() (buf []byte, more int64, err error) {
	switch {
	case br.codec == CodecNone:
		return br.stored(), 0, nil
	case br.rawLen > streamAbove:
		return br.startStream()
	}
	dec, err := zstdDecoder()
	if err != nil {
		return nil, 0, err
	}
	if br.raw == nil {
		br.pooledRaw = raws.Get().(*[]byte)
		br.raw = *br.pooledRaw
	}
	if br.rawLen > cap(br.raw) && br.rawLen > pooledRawLimit {
		if err := br.mem.reserve(br.ctx, br.mem.size+int64(br.rawLen)); err != nil {
			return nil, 0, err
		}
	}
	br.raw = grow(br.raw, br.rawLen)
	out, err := dec.DecodeAll(br.stored(), br.raw[:0:br.rawLen])
	if err != nil {
		return nil, 0, br.fail(br.blockAt(), corruptf("zstd payload does not decompress: %v", err))
	}
	if len(out) != br.rawLen {
		return nil, 0, br.fail(br.blockAt(), corruptf("zstd payload decompresses to %d bytes, the block says %d", len(out), br.rawLen))
	}
	return out, 0, nil
}

// startStream begins a streamed block: it checks the frame's window
// before anything is allocated for it, and reads the first window.
func (br *blockReader) startStream() ([]byte, int64, error) {
	stored := br.stored()
	window := uint64(maxZstdWindow)
	var h zstd.Header
	// A header that does not decode is the decoder's to report.
	if h.Decode(stored) == nil && !h.Skippable {
		window = h.WindowSize
		if h.SingleSegment {
			window = h.FrameContentSize
		}
		switch {
		case window > maxZstdWindow:
			return nil, 0, br.fail(br.blockAt(), corruptf("zstd frame with a window of %d bytes, above the %d a reader keeps", window, maxZstdWindow))
		case h.HasFCS && h.FrameContentSize != uint64(br.rawLen):
			return nil, 0, br.fail(br.blockAt(), corruptf("zstd frame of %d bytes in a block whose raw length is %d", h.FrameContentSize, br.rawLen))
		}
	}
	// The decoder keeps its window and two blocks of room beside it.
	ring := int64(window) + 2*(min(int64(window), 128<<10)+64)
	first := min(streamWindow, br.rawLen)
	if err := br.mem.reserve(br.ctx, br.mem.size+ring+int64(first)); err != nil {
		return nil, 0, err
	}
	dec, err := zstd.NewReader(bytes.NewReader(stored),
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(maxZstdWindow),
		zstd.WithDecoderMaxMemory(maxBlockRaw))
	if err != nil {
		return nil, 0, err
	}
	br.stream, br.streamLeft = dec, int64(br.rawLen)
	return br.refill(make([]byte, 0, first), 0, first)
}

// refill moves the unread bytes buf[from:] of a streamed block's window to
// its front and reads on from the stream until the window holds at least
// need bytes, growing it if need be, or the payload ends. need is at most
// the unread bytes plus those still to come.
func (br *blockReader) refill(buf []byte, from, need int) ([]byte, int64, error) {
	unread := len(buf) - from
	if need > cap(buf) {
		size := min(max(need, 2*cap(buf)), unread+int(br.streamLeft))
		if err := br.mem.reserve(br.ctx, br.mem.size+int64(size-cap(buf))); err != nil {
			return nil, 0, err
		}
		grown := make([]byte, unread, size)
		copy(grown, buf[from:])
		buf = grown
	} else {
		buf = buf[:copy(buf, buf[from:])]
	}
	n := min(cap(buf)-len(buf), int(br.streamLeft))
	got, err := io.ReadFull(br.stream, buf[len(buf):len(buf)+n])
	buf = buf[:len(buf)+got]
	br.streamLeft -= int64(got)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, 0, br.fail(br.blockAt(), corruptf("zstd payload decompresses to %d bytes, the block says %d", int64(br.rawLen)-br.streamLeft, br.rawLen))
	case err != nil:
		return nil, 0, br.fail(br.blockAt(), corruptf("zstd payload does not decompress: %v", err))
	}
	return buf, br.streamLeft, nil
}

// finish checks, once every byte of the current block's payload has been
// read, that a streamed block's zstd payload ends there too.
func (br *blockReader) finish() error {
	if br.stream == nil {
		return nil
	}
	var extra [1]byte
	n, err := br.stream.Read(extra[:])
	switch {
	case n > 0:
		return br.fail(br.blockAt(), corruptf("zstd payload decompresses to more than the %d bytes the block says", br.rawLen))
	case err != nil && !errors.Is(err, io.EOF):
		return br.fail(br.blockAt(), corruptf("zstd payload does not decompress: %v", err))
	}
	return nil
}

// checkBlock verifies a stored block's CRC and then its header.
func checkBlock(b []byte) error {
	body := b[:len(b)-blockCRCLen]
	if want, got := binary.BigEndian.Uint32(b[len(body):]), crc.Checksum(body); want != got {
		return corruptf("block checksum mismatch: stored %08x, computed %08x", want, got)
	}
	stored := uint64(len(body) - blockHeaderLen)
	raw := uint64(binary.BigEndian.Uint32(b[5:]))
	switch codec := Codec(b[0]); {
	case codec != CodecNone && codec != CodecZstd:
		return corruptf("unknown block codec %d", codec)
	case raw == 0:
		return corruptf("empty block")
	case raw > maxBlockRaw:
		return corruptf("block raw length %d above the limit of %d", raw, maxBlockRaw)
	case codec == CodecNone && raw != stored:
		return corruptf("uncompressed block with raw length %d and stored length %d", raw, stored)
	case codec == CodecZstd && raw > stored*maxZstdExpansion:
		return corruptf("zstd block of %d bytes cannot expand to %d", stored, raw)
	}
	return nil
}

// grow returns a slice of length n, reusing b's array when it is large
// enough. The contents are not kept.
func grow(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	return make([]byte, n)
}
