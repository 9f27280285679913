package sizing

import "math"

// The arithmetic of Go's allocator (Go 1.26, 64-bit), which the heap model
// is built on. HeapAlloc grows by the size class an object is rounded up
// to, not by the size asked for, so the model rounds the same way.

// sizeClasses are the runtime's small-object size classes
// (internal/runtime/gc.SizeClassToSize without class 0).
var sizeClasses = [...]int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792,
	2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240,
	10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

const (
	ptrSize = 8
	// tinyBlock is the block that pointer-free objects under 16 bytes share.
	tinyBlock = 16
	// Objects with pointers above mallocHeaderMin bytes carry an 8-byte
	// header for the collector.
	mallocHeaderMin = 512
	mallocHeader    = 8
	maxSmall        = 32768
	pageSize        = 8192
)

// roundup returns the bytes an allocation of n bytes takes, and how many of
// them the object may use. pointers says whether the object holds pointers:
// a small object with pointers above 512 bytes carries an 8-byte header
// for the collector; a large one gets whole pages and no header.
func roundup(n int, pointers bool) (block, usable int) {
	if n <= 0 {
		return 0, 0
	}
	header := 0
	if pointers && n > mallocHeaderMin && n <= maxSmall-mallocHeader {
		header = mallocHeader
	}
	if n+header > maxSmall {
		block = (n + pageSize - 1) / pageSize * pageSize
		return block, block
	}
	for _, c := range sizeClasses {
		if c >= n+header {
			return c, c - header
		}
	}
	return maxSmall, maxSmall - header
}

// alloc is the heap cost of one live allocation of n bytes. Pointer-free
// objects under 16 bytes go to the tiny allocator, which packs them into
// 16-byte blocks that live as long as any object in them. A job allocates
// the garbage of each record it processes between its state writes, so a
// small live object (a boxed number, a short string) mostly shares its
// block with garbage and keeps the whole block: the model counts the
// block. A state restored from a savepoint, allocated with nothing in
// between, packs tighter than that until its values are rewritten.
func alloc(n int, pointers bool) float64 {
	if n <= 0 {
		return 0
	}
	if !pointers && n < tinyBlock {
		return tinyBlock
	}
	block, _ := roundup(n, pointers)
	return float64(block)
}

// sliceBytes is the backing array of a slice grown by appending n elements
// of elem bytes one at a time, as append's growth rule leaves it: doubling
// up to 256 elements, then about 1.25 times, each capacity rounded up to a
// size class. Only the final array is live; the earlier ones are garbage.
func sliceBytes(n, elem int, pointers bool) float64 {
	if n <= 0 {
		return 0
	}
	c, block := 0, 0
	for c < n {
		var usable int
		block, usable = roundup(nextCap(c+1, c)*elem, pointers)
		c = usable / elem
	}
	return float64(block)
}

// nextCap is the runtime's nextslicecap: the capacity append asks for when
// a slice of capacity oldCap must hold newLen elements.
func nextCap(newLen, oldCap int) int {
	if newLen > 2*oldCap {
		return newLen
	}
	if oldCap < 256 {
		return 2 * oldCap
	}
	c := oldCap
	for c < newLen {
		c += (c + 3*256) >> 2
	}
	return c
}

// Swiss-table maps (Go 1.24 and later) store slots in groups of 8, each
// group with an 8-byte control word. A map holds at most 8 entries in a
// single group; beyond that, tables of up to 1024 slots, grown by doubling
// when 7/8 full, and split in two by the next bit of the hash once a table
// of 1024 slots is 7/8 full.
const (
	mapHeader      = 48 // the runtime's Map struct
	mapTableHeader = 32
	groupSlots     = 8
	maxTableSlots  = 1024
	maxTableUsed   = maxTableSlots * 7 / 8
)

// mapBytes is the memory of a map[K]V holding n entries whose key and
// value take slot bytes together, all of them pointers or not.
func mapBytes(n float64, slot int) float64 {
	if n <= 0 {
		return 0
	}
	group := ptrSize + groupSlots*slot
	if n <= groupSlots {
		return mapHeader + alloc(group, true)
	}
	if n <= maxTableUsed {
		c := 16
		for float64(c*7/8) < n {
			c *= 2
		}
		return mapHeader + ptrSize + mapTableHeader + alloc(c/groupSlots*group, true)
	}
	tables := expectedTables(n)
	dir := 1
	for float64(dir) < tables {
		dir *= 2
	}
	return mapHeader + alloc(dir*ptrSize, true) + tables*(mapTableHeader+alloc(maxTableSlots/groupSlots*group, true))
}

// expectedTables is the expected number of tables of a map of n entries.
// Entries only arrive, so a table covering 1/2^d of the hash space ends up
// split exactly when more than 896 of the n hashes fall in it: each such
// split adds a table. The count is binomial, here approximated by a normal
// distribution.
func expectedTables(n float64) float64 {
	tables := 1.0
	for d := 0; d < 64; d++ {
		p := math.Ldexp(1, -d)
		mean, sd := n*p, math.Sqrt(n*p*(1-p))
		if mean+8*sd < maxTableUsed {
			break
		}
		split := 1.0
		if sd > 0 {
			split = 0.5 * math.Erfc((maxTableUsed+0.5-mean)/(sd*math.Sqrt2))
		} else if mean <= maxTableUsed {
			split = 0
		}
		tables += math.Ldexp(split, d)
	}
	return tables
}
