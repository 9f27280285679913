package rescale

import (
	"bytes"
	"cmp"
	"encoding/binary"
)

// sortGroups orders the groups of a chunk by (key group, ref, time, key,
// namespace) in two steps that use how they arrive. A counting sort by
// (key group, ref) first, which is linear; within one (key group, ref) the
// groups are then a few ascending runs already, one per input segment
// (and chunk of it) that contributed, since each input segment is sorted
// and spilled in order. Merging adjacent runs takes n log(runs)
// comparisons, against n log n for a general sort: with 128 key groups
// rescaled to 720, a new key group has 8 sources.
func (s *sorter) sortGroups() {
	refs := int32(len(s.shapes))
	class := func(g *group) int { return int((g.kg-int32(s.kgs.Start))*refs + g.ref) }
	n := s.kgs.Len() * len(s.shapes)
	s.counts = grown(s.counts, n+1)
	clear(s.counts)
	for i := range s.groups {
		s.counts[class(&s.groups[i])+1]++
	}
	for c := 1; c <= n; c++ {
		s.counts[c] += s.counts[c-1]
	}
	s.tmp = grown(s.tmp, len(s.groups))
	// counts[c] is where the next group of class c goes; once all are
	// placed, it is where class c+1 starts.
	for i := range s.groups {
		c := class(&s.groups[i])
		s.tmp[s.counts[c]] = s.groups[i]
		s.counts[c]++
	}
	lo := 0
	for c := range n {
		hi := s.counts[c]
		if hi-lo > 1 {
			if sorted := s.mergeRuns(s.tmp[lo:hi], s.groups[lo:hi]); &sorted[0] != &s.tmp[lo] {
				copy(s.tmp[lo:hi], sorted)
			}
		}
		lo = hi
	}
	s.groups, s.tmp = s.tmp, s.groups
}

// compareInClass orders two groups of the same key group and ref.
func (s *sorter) compareInClass(a, b *group) int {
	if a.time != b.time {
		return cmp.Compare(a.time, b.time)
	}
	if a.keyPrefix != b.keyPrefix {
		return cmp.Compare(a.keyPrefix, b.keyPrefix)
	}
	buf := s.buf
	if c := bytes.Compare(buf[a.keyOff:a.keyOff+a.keyLen], buf[b.keyOff:b.keyOff+b.keyLen]); c != 0 {
		return c
	}
	return bytes.Compare(buf[a.nsOff:a.nsOff+a.nsLen], buf[b.nsOff:b.nsOff+b.nsLen])
}

// mergeRuns sorts a by merging its ascending runs pairwise, pass after
// pass, between a and scratch (of the same length); it returns whichever
// holds the result. Merging takes the left group on ties, so it is stable.
func (s *sorter) mergeRuns(a, scratch []group) []group {
	starts := append(s.starts[:0], 0)
	for i := 1; i < len(a); i++ {
		if s.compareInClass(&a[i-1], &a[i]) > 0 {
			starts = append(starts, i)
		}
	}
	for len(starts) > 1 {
		merged := starts[:0]
		for r := 0; r < len(starts); r += 2 {
			lo := starts[r]
			merged = append(merged, lo)
			if r+1 == len(starts) {
				copy(scratch[lo:], a[lo:])
				break
			}
			mid, hi := starts[r+1], len(a)
			if r+2 < len(starts) {
				hi = starts[r+2]
			}
			s.mergeTwo(a[lo:mid], a[mid:hi], scratch[lo:hi])
		}
		starts = merged
		a, scratch = scratch, a
	}
	s.starts = starts
	return a
}

// mergeTwo merges the sorted x and y into out.
func (s *sorter) mergeTwo(x, y, out []group) {
	i, j, k := 0, 0, 0
	for i < len(x) && j < len(y) {
		if s.compareInClass(&y[j], &x[i]) < 0 {
			out[k] = y[j]
			j++
		} else {
			out[k] = x[i]
			i++
		}
		k++
	}
	k += copy(out[k:], x[i:])
	copy(out[k:], y[j:])
}

// grown returns s with length n, reusing its array when it is large enough.
func grown[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

// prefixOf returns the first 8 bytes of key as a big-endian number, padded
// with zeros: prefixes order as the keys do, except that equal prefixes
// leave the order to the rest of the keys.
func prefixOf(key []byte) uint64 {
	var b [8]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:])
}
