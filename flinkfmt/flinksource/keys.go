package flinksource

import (
	"bytes"
	"hash/maphash"
)

// keySet counts the distinct keys of one state in one key group, given
// each run of entries of one key once. RocksDB writes a state's keys in
// ascending byte order, so while each key is greater than the one before
// it is new and a comparison tells; keys out of order (the heap's order, a
// state with namespaces) make it look each up in a hash set of every key
// so far, built then. The keys are kept in one arena, so the set costs no
// allocation per key and is reused from one key group to the next.
type keySet struct {
	n     uint64
	arena []byte
	// ends holds the end of each key in arena; a key starts where the one
	// before it ends.
	ends []int
	// table is an open-addressing table of indexes into ends plus one (0
	// is a free slot), nil while the keys ascend.
	table    []int
	unsorted bool
	seed     maphash.Seed
}

func newKeySet() *keySet { return &keySet{seed: maphash.MakeSeed()} }

func (s *keySet) reset() {
	s.n, s.arena, s.ends, s.table, s.unsorted = 0, s.arena[:0], s.ends[:0], s.table[:0], false
}

func (s *keySet) key(i int) []byte {
	start := 0
	if i > 0 {
		start = s.ends[i-1]
	}
	return s.arena[start:s.ends[i]]
}

// add counts key unless it was added before.
func (s *keySet) add(key []byte) {
	if !s.unsorted {
		if len(s.ends) == 0 || bytes.Compare(key, s.key(len(s.ends)-1)) > 0 {
			s.push(key)
			return
		}
		s.unsorted = true
		s.rehash(max(16, 4*len(s.ends)))
	}
	mask := uint64(len(s.table) - 1)
	for h := maphash.Bytes(s.seed, key) & mask; ; h = (h + 1) & mask {
		j := s.table[h]
		if j == 0 {
			s.push(key)
			s.table[h] = len(s.ends)
			if 2*len(s.ends) > len(s.table) {
				s.rehash(2 * len(s.table))
			}
			return
		}
		if bytes.Equal(s.key(j-1), key) {
			return
		}
	}
}

func (s *keySet) push(key []byte) {
	s.arena = append(s.arena, key...)
	s.ends = append(s.ends, len(s.arena))
	s.n++
}

// rehash makes the table n slots, n a power of two at least twice the
// keys, and puts every key in it.
func (s *keySet) rehash(n int) {
	size := 16
	for size < n {
		size *= 2
	}
	if cap(s.table) >= size {
		s.table = s.table[:size]
		clear(s.table)
	} else {
		s.table = make([]int, size)
	}
	mask := uint64(size - 1)
	for i := range s.ends {
		h := maphash.Bytes(s.seed, s.key(i)) & mask
		for s.table[h] != 0 {
			h = (h + 1) & mask
		}
		s.table[h] = i + 1
	}
}
