package snapshotfmt

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"time"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/ttl"
)

// The metadata file: preamble, u64 body length, body, CRC over the length
// and the body. FORMAT.md gives the grammar of the body.
const metadataHeaderLen = preambleLen + 8

// dataFile is one entry of the metadata's file list.
type dataFile struct {
	name string
	size int64
}

// index is what the metadata holds beyond the model: the version, the data
// files and where each segment lies.
type index struct {
	version Version
	files   []dataFile // sorted by name
	// segments holds, per operator, its segments sorted by (key group, ref).
	segments [][]savepoint.Segment
}

// hasTimestamps reports whether a segment of ref records the minimum and
// maximum timestamps.
func hasTimestamps(op *savepoint.Operator, ref savepoint.StateRef) bool {
	s := shapeOf(op, ref, 0)
	return s.timestamps()
}

func lessSegment(a, b *savepoint.Segment) int {
	return cmp.Or(cmp.Compare(a.KeyGroup, b.KeyGroup), a.Ref.Compare(b.Ref))
}

// The index numbers the keyed states of an operator and then its timer
// services with one number, the segment ref of FORMAT.md: diskRef and
// stateRef convert between it and a savepoint.StateRef.
func diskRef(op *savepoint.Operator, ref savepoint.StateRef) uint64 {
	if ref.Timer {
		return uint64(len(op.States) + ref.State)
	}
	return uint64(ref.State)
}

func stateRef(opIdx int, op *savepoint.Operator, n uint64) savepoint.StateRef {
	if n >= uint64(len(op.States)) {
		return savepoint.StateRef{Operator: opIdx, State: int(n) - len(op.States), Timer: true}
	}
	return savepoint.StateRef{Operator: opIdx, State: int(n)}
}

// encodeMetadataBody encodes a model that checkMetadata accepted, with an
// index whose files are sorted and whose segments name them.
func encodeMetadataBody(m *savepoint.Metadata, idx *index) []byte {
	b := binary.AppendUvarint(nil, m.ID)
	b = binary.BigEndian.AppendUint64(b, uint64(m.CreatedAt))
	b = binary.BigEndian.AppendUint64(b, uint64(m.Watermark))
	b = binary.AppendUvarint(b, uint64(len(m.Lineage)))
	for _, s := range m.Lineage {
		b = appendString(b, s)
	}
	fileIndex := make(map[string]int, len(idx.files))
	b = binary.AppendUvarint(b, uint64(len(idx.files)))
	for i, f := range idx.files {
		fileIndex[f.name] = i
		b = appendString(b, f.name)
		b = binary.AppendUvarint(b, uint64(f.size))
	}
	b = binary.AppendUvarint(b, uint64(len(m.Operators)))
	for i := range m.Operators {
		b = appendOperator(b, m.CreatedAt, &m.Operators[i], idx.segments[i], fileIndex)
	}
	return b
}

func appendOperator(b []byte, createdAt int64, op *savepoint.Operator, segs []savepoint.Segment, fileIndex map[string]int) []byte {
	b = appendString(b, op.UID)
	b = appendString(b, op.Name)
	b = binary.AppendUvarint(b, uint64(op.Parallelism))
	b = binary.AppendUvarint(b, uint64(op.MaxParallelism))
	b = append(b, uint8(op.KeyHash))
	if op.KeyHash != 0 {
		b = appendSnapshot(b, op.Key)
	}
	b = binary.AppendUvarint(b, uint64(len(op.States)))
	for i := range op.States {
		b = appendState(b, &op.States[i])
	}
	b = binary.AppendUvarint(b, uint64(len(op.Timers)))
	for _, t := range op.Timers {
		b = appendString(b, t.Name)
		b = appendSnapshot(b, t.Namespace)
	}
	b = binary.AppendUvarint(b, uint64(len(op.OperatorStates)))
	for _, s := range op.OperatorStates {
		b = appendString(b, s.Name)
		b = append(b, uint8(s.Distribution))
		b = appendSnapshot(b, s.Element)
		b = binary.AppendUvarint(b, uint64(len(s.Subtasks)))
		for _, elems := range s.Subtasks {
			b = binary.AppendUvarint(b, uint64(len(elems)))
			for _, e := range elems {
				b = appendBytes(b, e)
			}
		}
	}
	b = binary.AppendUvarint(b, uint64(len(op.BroadcastStates)))
	for _, s := range op.BroadcastStates {
		b = appendString(b, s.Name)
		b = appendSnapshot(b, s.Key)
		b = appendSnapshot(b, s.Value)
		b = binary.AppendUvarint(b, uint64(len(s.Entries)))
		for _, e := range s.Entries {
			b = appendBytes(b, e.Key)
			b = appendBytes(b, e.Value)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(segs)))
	for i := range segs {
		s := &segs[i]
		b = binary.AppendUvarint(b, uint64(s.KeyGroup))
		b = binary.AppendUvarint(b, diskRef(op, s.Ref))
		b = binary.AppendUvarint(b, uint64(fileIndex[s.File]))
		b = binary.AppendUvarint(b, uint64(s.Offset))
		b = binary.AppendUvarint(b, uint64(s.Length))
		b = binary.AppendUvarint(b, s.Keys)
		b = binary.AppendUvarint(b, s.Entries)
		b = binary.AppendUvarint(b, s.Bytes)
		if hasTimestamps(op, s.Ref) {
			b = binary.BigEndian.AppendUint64(b, uint64(s.MinTimestamp))
			b = binary.BigEndian.AppendUint64(b, uint64(s.MaxTimestamp))
		}
		if s.Ref.Timer {
			continue
		}
		b = appendHistogram(b, s.Sizes)
		if op.States[s.Ref.State].TTL != nil {
			// The anchor is stored as its distance from the creation time,
			// one byte when it is the creation time; the subtraction wraps
			// as the reader's addition does.
			b = binary.AppendVarint(b, int64(uint64(s.Anchor)-uint64(createdAt)))
			b = appendHistogram(b, s.Modified)
		}
	}
	return b
}

// appendHistogram writes the nonzero buckets, each as its distance from
// the one before (the first from -1) less one, and its count.
func appendHistogram(b []byte, h savepoint.Histogram) []byte {
	b = binary.AppendUvarint(b, uint64(len(h)))
	prev := -1
	for _, x := range h {
		b = binary.AppendUvarint(b, uint64(x.Bucket-prev-1))
		b = binary.AppendUvarint(b, x.Count)
		prev = x.Bucket
	}
	return b
}

func appendState(b []byte, s *savepoint.KeyedState) []byte {
	b = appendString(b, s.Name)
	b = append(b, uint8(s.Kind))
	b = appendSnapshot(b, s.Namespace)
	if s.Kind == savepoint.Map {
		b = appendSnapshot(b, s.MapKey)
	}
	b = appendSnapshot(b, s.Value)
	if s.TTL == nil {
		return append(b, 0)
	}
	c := s.TTL
	b = append(b, 1)
	b = binary.AppendUvarint(b, uint64(c.Millis()))
	var flags uint8
	if c.CleanupFullSnapshot {
		flags |= ttlFlagCleanupFullSnapshot
	}
	b = append(b, uint8(c.Update), uint8(c.Visibility), flags)
	b = binary.AppendUvarint(b, uint64(c.CleanupIncremental))
	return binary.AppendUvarint(b, uint64(c.SweepBudget))
}

const ttlFlagCleanupFullSnapshot = 1

// grown appends a zero element to *s and returns a pointer to it, valid
// until the next append. Decoded lists grow as their elements are decoded
// rather than to the count read before them: the count is bounded by the
// bytes that remain, but an element takes far more memory than its smallest
// encoding.
func grown[T any](s *[]T) *T {
	var zero T
	*s = append(*s, zero)
	return &(*s)[len(*s)-1]
}

// metaReader decodes a metadata body. kg is the key group of the segment
// being decoded, so that an error there names it.
type metaReader struct {
	d         *decoder
	version   Version
	createdAt int64
	files     []dataFile
	kg        int
	// segAt holds the body offset of each segment, per operator, so that a
	// tiling error can point at a segment.
	segAt [][]int64
}

// decodeMetadataBody decodes and checks a metadata body whose CRC has been
// verified. It does no I/O: the data files are opened by the caller, only
// after every name has been checked here.
func decodeMetadataBody(body []byte, version Version) (*savepoint.Metadata, *index, error) {
	r := &metaReader{d: newDecoder(body, metadataHeaderLen), kg: -1, version: version}
	d := r.d
	m := &savepoint.Metadata{}
	m.ID = d.uvarint("savepoint id")
	m.CreatedAt = d.i64("creation time")
	r.createdAt = m.CreatedAt
	if version >= Version2 {
		m.Watermark = d.i64("watermark")
	} else {
		// Version 1 does not record it: no event-time timer is known to
		// have fired.
		m.Watermark = math.MinInt64
	}
	n := d.count("lineage")
	for i := 0; i < n && d.err == nil; i++ {
		*grown(&m.Lineage) = d.str("lineage entry")
	}
	r.readFiles()
	idx := &index{version: version, files: r.files}
	n = d.count("operators")
	uids := names{}
	for i := 0; i < n && d.err == nil; i++ {
		start := d.off
		op := grown(&m.Operators)
		idx.segments = append(idx.segments, nil)
		r.segAt = append(r.segAt, nil)
		r.readOperator(i, op, idx)
		if d.err == nil {
			if err := uids.add("operator", op.UID); err != nil {
				d.failf(start, "%v", err)
			}
		}
	}
	d.end("the metadata body")
	if d.err != nil {
		return nil, nil, at(MetadataName, r.kg, d.errOff, d.err)
	}
	if err := r.checkTiling(idx); err != nil {
		return nil, nil, err
	}
	return m, idx, nil
}

func (r *metaReader) readFiles() {
	d := r.d
	n := d.count("data files")
	for i := 0; i < n && d.err == nil; i++ {
		start := d.off
		name := d.str("data file name")
		if d.err != nil {
			return
		}
		if err := checkDataFileName(name); err != nil {
			d.failAt(start, &problem{msg: err.Error(), kind: []error{ErrCorrupt, savepoint.ErrCorrupt, err}})
			return
		}
		// Sorted names make the list canonical and duplicates impossible.
		if i > 0 && name <= r.files[i-1].name {
			d.failf(start, "data file %q is not listed after %q: names must be sorted and unique", name, r.files[i-1].name)
			return
		}
		sizeAt := d.off
		size := d.uvarintMax("data file size", math.MaxInt64)
		if d.err == nil && size < preambleLen {
			d.failf(sizeAt, "data file %q: size %d is shorter than its preamble", name, size)
		}
		*grown(&r.files) = dataFile{name: name, size: int64(size)}
	}
}

func (r *metaReader) readOperator(opIdx int, op *savepoint.Operator, idx *index) {
	d := r.d
	op.UID = d.str("operator uid")
	op.Name = d.str("operator name")
	pAt := d.off
	op.Parallelism = int(d.uvarintMax("parallelism", keygroup.MaxParallelismLimit))
	op.MaxParallelism = int(d.uvarintMax("max parallelism", keygroup.MaxParallelismLimit))
	if d.err == nil {
		if err := keygroup.Validate(op.Parallelism, op.MaxParallelism); err != nil {
			d.failf(pAt, "operator %q: %v", op.UID, err)
		}
	}
	hashAt := d.off
	switch h := d.u8("key hash"); h {
	case 0:
	case uint8(keygroup.Murmur3):
		op.KeyHash = keygroup.Murmur3
		op.Key = d.snapshot("key serializer", 1)
	default:
		d.failf(hashAt, "operator %q: unknown key hash function %d", op.UID, h)
	}
	keyedOnly := func(n, countAt int, what string) {
		if n > 0 && !op.Keyed() {
			d.failf(countAt, "operator %q is not keyed but has %s", op.UID, what)
		}
	}

	countAt := d.off
	n := d.count("states")
	keyedOnly(n, countAt, "keyed states")
	seen := names{}
	for i := 0; i < n && d.err == nil; i++ {
		start := d.off
		s := grown(&op.States)
		r.readState(s)
		if err := seen.add("state", s.Name); d.err == nil && err != nil {
			d.failf(start, "operator %q: %v", op.UID, err)
		}
	}

	countAt = d.off
	n = d.count("timer services")
	keyedOnly(n, countAt, "timer services")
	seen = names{}
	for i := 0; i < n && d.err == nil; i++ {
		start := d.off
		t := grown(&op.Timers)
		t.Name = d.str("timer service name")
		t.Namespace = d.snapshot("timer namespace serializer", 1)
		if err := seen.add("timer service", t.Name); d.err == nil && err != nil {
			d.failf(start, "operator %q: %v", op.UID, err)
		}
	}

	n = d.count("operator states")
	seen = names{}
	for i := 0; i < n && d.err == nil; i++ {
		start := d.off
		s := grown(&op.OperatorStates)
		r.readOperatorState(s, op.Parallelism)
		if err := seen.add("operator state", s.Name); d.err == nil && err != nil {
			d.failf(start, "operator %q: %v", op.UID, err)
		}
	}

	n = d.count("broadcast states")
	seen = names{}
	for i := 0; i < n && d.err == nil; i++ {
		start := d.off
		s := grown(&op.BroadcastStates)
		r.readBroadcastState(s)
		if err := seen.add("broadcast state", s.Name); d.err == nil && err != nil {
			d.failf(start, "operator %q: %v", op.UID, err)
		}
	}

	countAt = d.off
	n = d.count("segments")
	keyedOnly(n, countAt, "segments")
	for i := 0; i < n && d.err == nil; i++ {
		start := d.off
		*grown(&r.segAt[opIdx]) = d.pos()
		r.readSegment(op, opIdx, grown(&idx.segments[opIdx]))
		segs := idx.segments[opIdx]
		if d.err == nil && i > 0 && lessSegment(&segs[i-1], &segs[i]) >= 0 {
			d.failf(start, "operator %q: segment (key group %d, ref %d) is not after (key group %d, ref %d): segments must be sorted by (key group, ref) without duplicates",
				op.UID, segs[i].KeyGroup, diskRef(op, segs[i].Ref), segs[i-1].KeyGroup, diskRef(op, segs[i-1].Ref))
		}
		if d.err == nil {
			r.kg = -1
		}
	}
}

func (r *metaReader) readState(s *savepoint.KeyedState) {
	d := r.d
	s.Name = d.str("state name")
	kindAt := d.off
	s.Kind = savepoint.Kind(d.u8("state kind"))
	if d.err == nil && !s.Kind.Valid() {
		d.failf(kindAt, "state %q: unknown state kind code %d", s.Name, s.Kind)
	}
	s.Namespace = d.snapshot("namespace serializer", 1)
	if s.Kind == savepoint.Map {
		s.MapKey = d.snapshot("map-key serializer", 1)
	}
	s.Value = d.snapshot("value serializer", 1)
	hasAt := d.off
	switch has := d.u8("has TTL"); has {
	case 0:
	case 1:
		s.TTL = r.readTTL()
	default:
		d.failf(hasAt, "state %q: has-TTL byte is %d, want 0 or 1", s.Name, has)
	}
}

func (r *metaReader) readTTL() *ttl.Config {
	d := r.d
	start := d.off
	ms := d.uvarintMax("TTL", uint64(maxTTLMillis))
	c := &ttl.Config{
		TTL:        time.Duration(ms) * time.Millisecond,
		Update:     ttl.UpdateType(d.u8("TTL update type")),
		Visibility: ttl.Visibility(d.u8("TTL visibility")),
	}
	flagsAt := d.off
	flags := d.u8("TTL flags")
	if d.err == nil && flags&^ttlFlagCleanupFullSnapshot != 0 {
		d.failf(flagsAt, "unknown TTL flag bits %#02x", flags&^ttlFlagCleanupFullSnapshot)
	}
	c.CleanupFullSnapshot = flags&ttlFlagCleanupFullSnapshot != 0
	c.CleanupIncremental = int(d.uvarintMax("incremental cleanup size", maxCleanupSize))
	c.SweepBudget = int(d.uvarintMax("sweep budget", maxCleanupSize))
	if d.err == nil {
		if err := checkTTL(c); err != nil {
			d.failf(start, "%v", err)
		}
	}
	return c
}

func (r *metaReader) readOperatorState(s *savepoint.OperatorState, parallelism int) {
	d := r.d
	start := d.off
	s.Name = d.str("operator state name")
	s.Distribution = savepoint.Distribution(d.u8("distribution"))
	s.Element = d.snapshot("element serializer", 1)
	n := d.count("subtasks")
	for i := 0; i < n && d.err == nil; i++ {
		elems := grown(&s.Subtasks)
		m := d.count("subtask elements")
		for j := 0; j < m && d.err == nil; j++ {
			*grown(elems) = d.bytes("operator state element")
		}
	}
	if d.err == nil {
		if err := checkOperatorState(s, parallelism); err != nil {
			d.failf(start, "%v", err)
		}
	}
}

func (r *metaReader) readBroadcastState(s *savepoint.BroadcastState) {
	d := r.d
	start := d.off
	s.Name = d.str("broadcast state name")
	s.Key = d.snapshot("broadcast key serializer", 1)
	s.Value = d.snapshot("broadcast value serializer", 1)
	n := d.count("broadcast entries")
	for i := 0; i < n && d.err == nil; i++ {
		e := grown(&s.Entries)
		e.Key = d.bytes("broadcast key")
		e.Value = d.bytes("broadcast value")
	}
	if d.err == nil {
		if err := checkBroadcastOrder(s); err != nil {
			d.failf(start, "%v", err)
		}
	}
}

func (r *metaReader) readSegment(op *savepoint.Operator, opIdx int, s *savepoint.Segment) {
	d := r.d
	start := d.off
	kg := d.uvarint("key group")
	if d.err != nil {
		return
	}
	if kg >= uint64(op.MaxParallelism) {
		d.failf(start, "operator %q: key group %d not below max parallelism %d", op.UID, kg, op.MaxParallelism)
		return
	}
	r.kg = int(kg)
	refAt := d.off
	ref := d.uvarint("segment ref")
	if d.err == nil && ref >= uint64(len(op.States)+len(op.Timers)) {
		d.failf(refAt, "operator %q: segment ref %d names no state or timer service", op.UID, ref)
		return
	}
	fileAt := d.off
	file := d.uvarint("segment file")
	if d.err == nil && file >= uint64(len(r.files)) {
		d.failf(fileAt, "segment file %d is not in the file list of %d", file, len(r.files))
		return
	}
	offAt := d.off
	offset := d.uvarint("segment offset")
	length := d.uvarint("segment length")
	statsAt := d.off
	*s = savepoint.Segment{Ref: stateRef(opIdx, op, ref), Offset: int64(offset), Length: int64(length)}
	s.KeyGroup = int(kg)
	s.Keys = d.uvarint("segment keys")
	s.Entries = d.uvarint("segment entries")
	s.Bytes = d.uvarint("segment bytes")
	timer := s.Ref.Timer
	if hasTimestamps(op, s.Ref) {
		s.MinTimestamp = d.i64("segment minimum timestamp")
		s.MaxTimestamp = d.i64("segment maximum timestamp")
	}
	sizesAt, modifiedAt := d.off, 0
	if r.version >= Version2 && !timer {
		s.Sizes = r.readHistogram(&sizesHistogram)
		if op.States[s.Ref.State].TTL != nil {
			s.Anchor = int64(uint64(r.createdAt) + uint64(d.varint("histogram anchor")))
			modifiedAt = d.off
			s.Modified = r.readHistogram(&modifiedHistogram)
		}
	}
	if d.err != nil {
		return
	}
	defer func() {
		// After the figures' own checks, which the histograms are
		// checked against.
		switch {
		case d.err != nil:
		case s.Sizes != nil && s.Sizes.Total() != s.Entries:
			d.failf(sizesAt, "value-size histogram counts %d entries, the segment %d", s.Sizes.Total(), s.Entries)
		case s.Modified != nil && s.Modified.Total() != s.Entries:
			d.failf(modifiedAt, "last-modified histogram counts %d entries, the segment %d", s.Modified.Total(), s.Entries)
		}
	}()
	f := r.files[file]
	s.File = f.name
	size := uint64(f.size)
	switch {
	case offset < preambleLen:
		d.failf(offAt, "segment offset %d inside the preamble of %s", offset, f.name)
	case length == 0:
		d.failf(offAt, "empty segment in %s", f.name)
	case offset > size || length > size-offset:
		d.failf(offAt, "segment at offset %d, length %d, ends beyond the %d bytes of %s", offset, length, size, f.name)
	case s.Entries == 0:
		d.failf(statsAt, "segment has no entries")
	case timer && s.Keys != 0:
		d.failf(statsAt, "timer segment counts %d keys, want 0", s.Keys)
	case !timer && (s.Keys == 0 || s.Keys > s.Entries):
		d.failf(statsAt, "segment counts %d keys for %d entries", s.Keys, s.Entries)
	case s.Entries > s.Bytes:
		// Every item and timer takes a raw byte at least.
		d.failf(statsAt, "segment counts %d entries in %d raw bytes", s.Entries, s.Bytes)
	case (s.Bytes-1)/maxZstdExpansion >= length:
		// No block expands more than that.
		d.failf(statsAt, "segment claims %d raw bytes, more than its %d bytes can hold", s.Bytes, length)
	case s.MinTimestamp > s.MaxTimestamp:
		d.failf(statsAt, "segment minimum timestamp %d above its maximum %d", s.MinTimestamp, s.MaxTimestamp)
	}
}

// histogramKind names a histogram of the index, and the fields of its
// buckets as errors name them: the names are built once, not for every
// bucket read.
type histogramKind struct {
	what, bucket, count string
	// limit is the number of buckets.
	limit int
}

var (
	sizesHistogram = histogramKind{"value-size histogram", "value-size histogram bucket",
		"value-size histogram count", savepoint.SizeBuckets}
	modifiedHistogram = histogramKind{"last-modified histogram", "last-modified histogram bucket",
		"last-modified histogram count", savepoint.ModifiedBuckets}
)

// readHistogram reads a histogram of kind k: at least one bucket, buckets
// below its limit, strictly increasing, each counting at least one, whose
// counts add up without overflow (the caller checks them against the
// entries).
func (r *metaReader) readHistogram(k *histogramKind) savepoint.Histogram {
	d := r.d
	what, limit := k.what, k.limit
	start := d.off
	n := d.count(what)
	if d.err == nil && n == 0 {
		d.failf(start, "%s is empty", what)
	}
	var h savepoint.Histogram
	if d.err == nil {
		h = make(savepoint.Histogram, 0, min(n, limit))
	}
	next, sum := uint64(0), uint64(0)
	for i := 0; i < n && d.err == nil; i++ {
		at := d.off
		gap := d.uvarint(k.bucket)
		count := d.uvarint(k.count)
		switch {
		case d.err != nil:
		case gap >= uint64(limit)-next:
			d.failf(at, "%s: bucket beyond the last, %d", what, limit-1)
		case count == 0:
			d.failf(at, "%s: bucket %d counts nothing", what, next+gap)
		case count > math.MaxUint64-sum:
			d.failf(at, "%s: counts overflow 64 bits", what)
		default:
			sum += count
			h = append(h, savepoint.HistBucket{Bucket: int(next + gap), Count: count})
			next += gap + 1
		}
	}
	return h
}

// checkTiling checks that the segments of each data file cover it exactly,
// so that no byte of a data file escapes verification.
func (r *metaReader) checkTiling(idx *index) error {
	type span struct {
		off, end int64
		kg       int
		at       int64 // the segment's offset in _metadata
	}
	perFile := make(map[string][]span, len(idx.files))
	for op, segs := range idx.segments {
		for i := range segs {
			s := &segs[i]
			perFile[s.File] = append(perFile[s.File], span{s.Offset, s.Offset + s.Length, s.KeyGroup, r.segAt[op][i]})
		}
	}
	for _, f := range idx.files {
		spans := perFile[f.name]
		slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.off, b.off) })
		next := int64(preambleLen)
		for _, s := range spans {
			if s.off < next {
				return at(MetadataName, s.kg, s.at, corruptf("segments overlap in %s: one starts at offset %d, before the previous one ends at %d", f.name, s.off, next))
			}
			if s.off > next {
				return at(MetadataName, s.kg, s.at, corruptf("gap in %s: bytes %d to %d belong to no segment", f.name, next, s.off))
			}
			next = s.end
		}
		if next != f.size {
			return at(MetadataName, -1, -1, corruptf("gap in %s: bytes %d to %d belong to no segment", f.name, next, f.size))
		}
	}
	return nil
}
