package snapshotfmt

import (
	"encoding/binary"
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
		zstd.WithDecoderMaxWindow(maxBlockRaw),
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

// windows recycles read windows between iterators: a scan opens one
// iterator per (key group, state), and fresh windows for each made the
// garbage collector run, and its write barriers cost, more than the
// decoding.
var windows = sync.Pool{New: func() any { b := make([]byte, 0, readAhead); return &b }}

// blockReader reads the blocks of one segment in order. It reads the file in
// windows; a block lies whole in the window while it is the current one.
type blockReader struct {
	f      storage.File
	name   string
	kg     int
	pos    int64 // file offset of the next block
	end    int64
	win    []byte // file bytes from winAt on
	winAt  int64
	cur    []byte // the current block as stored: header, payload, CRC
	raw    []byte // its decompressed payload, when compressed
	codec  Codec
	rawLen int
	// pooled and pooledRaw are the pools' buffers that win and raw started
	// from, returned by release.
	pooled, pooledRaw *[]byte
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
	// A buffer grown for an outsized block goes back too, unless it is so
	// large that keeping it would pin memory.
	if br.pooled != nil {
		recycle(&windows, br.pooled, br.win, 4*readAhead)
	}
	if br.pooledRaw != nil {
		recycle(&raws, br.pooledRaw, br.raw, 4*DefaultBlockSize)
	}
	br.pooled, br.pooledRaw, br.win, br.cur, br.raw = nil, nil, nil, nil, nil
}

func newBlockReader(f storage.File, name string, seg *savepoint.Segment) *blockReader {
	return &blockReader{f: f, name: name, kg: seg.KeyGroup, pos: seg.Offset, end: seg.Offset + seg.Length}
}

func (br *blockReader) fail(off int64, err error) error { return at(br.name, br.kg, off, err) }

// window returns n bytes of the file at br.pos, which the caller has checked
// lie within the segment. Reading replaces the window, so it is called only
// once the previous block is no longer used.
func (br *blockReader) window(n int) ([]byte, error) {
	if off := br.pos - br.winAt; br.pos >= br.winAt && off+int64(n) <= int64(len(br.win)) {
		return br.win[off : off+int64(n)], nil
	}
	size := max(n, int(min(br.end-br.pos, readAhead)))
	if br.win == nil {
		br.pooled = windows.Get().(*[]byte)
		br.win = *br.pooled
	}
	br.win, br.winAt = grow(br.win, size), br.pos
	if err := readAt(br.f, br.name, br.kg, br.win, br.pos); err != nil {
		br.win = br.win[:0]
		return nil, err
	}
	return br.win[:n], nil
}

// next reads the next block and verifies its CRC and header. It returns
// io.EOF when the segment ends exactly after the previous block.
func (br *blockReader) next() error {
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

// payload decompresses the current block if need be.
func (br *blockReader) payload() ([]byte, error) {
	if br.codec == CodecNone {
		return br.stored(), nil
	}
	dec, err := zstdDecoder()
	if err != nil {
		return nil, err
	}
	if br.raw == nil {
		br.pooledRaw = raws.Get().(*[]byte)
		br.raw = *br.pooledRaw
	}
	br.raw = grow(br.raw, br.rawLen)
	out, err := dec.DecodeAll(br.stored(), br.raw[:0:br.rawLen])
	if err != nil {
		return nil, br.fail(br.blockAt(), corruptf("zstd payload does not decompress: %v", err))
	}
	if len(out) != br.rawLen {
		return nil, br.fail(br.blockAt(), corruptf("zstd payload decompresses to %d bytes, the block says %d", len(out), br.rawLen))
	}
	return out, nil
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
