package pebblebackend

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
)

// listFilter is a Bloom filter over the prefixes of the lists that may hold
// elements below the write cache, in the write batch or the database: a
// list it has never seen holds none there, so reading it needs no lookup
// beyond the cache. That is the most common read of a list whose end is
// not remembered, a new one (a timer's pending records), and a lookup of a
// key that does not exist costs a seek through the batch's and the
// memtable's skiplists and a bloom probe per sstable.
//
// It is exact where it says no, since every way an element gets below the
// cache adds its list first: a spill of a cached element and a restore.
// It forgets nothing, so as lists come and go it fills with lists long
// gone: after listFilterCap additions it is rebuilt from the list elements
// below the cache, and if those alone are more than half of that it gives
// up and says maybe to every list from then on.
type listFilter struct {
	bits  []uint64
	seed  maphash.Seed
	added int
	off   bool
}

const (
	// listFilterBits is the filter's size, 128 KiB.
	listFilterBits = 1 << 20
	// listFilterCap is the lists it holds before a rebuild: about 10 bits
	// a list, where 4 probes give a false positive rate near 1%.
	listFilterCap = listFilterBits / 10
	listFilterK   = 4
)

// probes returns the hash pair from which the k bit positions of p derive.
func (f *listFilter) probes(p []byte) (h1, h2 uint64) {
	h := maphash.Bytes(f.seed, p)
	return h, h>>32 | h<<32 | 1
}

func (f *listFilter) add(p []byte) {
	if f.off {
		return
	}
	if f.bits == nil {
		f.bits = make([]uint64, listFilterBits/64)
		f.seed = maphash.MakeSeed()
	}
	h1, h2 := f.probes(p)
	fresh := false
	for i := range uint64(listFilterK) {
		bit := (h1 + i*h2) % listFilterBits
		w, m := &f.bits[bit/64], uint64(1)<<(bit%64)
		fresh = fresh || *w&m == 0
		*w |= m
	}
	// A list added before, each of its elements as it spills, counts once.
	if fresh {
		f.added++
	}
}

// mayHold reports whether the list with prefix p may hold elements below
// the cache.
func (f *listFilter) mayHold(p []byte) bool {
	if f.off {
		return true
	}
	if f.bits == nil {
		return false
	}
	h1, h2 := f.probes(p)
	for i := range uint64(listFilterK) {
		bit := (h1 + i*h2) % listFilterBits
		if f.bits[bit/64]&(1<<(bit%64)) == 0 {
			return false
		}
	}
	return true
}

func (f *listFilter) reset() {
	clear(f.bits)
	f.added, f.off = 0, false
}

// noteBelow records that the element at key k, of any state, gets below the
// cache; only list elements matter.
func (b *Backend) noteBelow(k []byte) {
	if len(k) < prefixLen+seqLen {
		return
	}
	if id := int(binary.BigEndian.Uint16(k[2:prefixLen])); id < len(b.isList) && b.isList[id] {
		b.lists.add(k[:len(k)-seqLen])
	}
}

// listsBelow reports whether the list with prefix p may hold elements below
// the cache, first rebuilding the filter when it is due.
func (b *Backend) listsBelow(p []byte) (bool, error) {
	f := &b.lists
	if f.added >= listFilterCap && !f.off && b.openIters == 0 {
		if err := b.rebuildListFilter(); err != nil {
			return true, err
		}
	}
	return f.mayHold(p), nil
}

// rebuildListFilter refills the filter with the lists that hold elements
// below the cache, one scan of the list states' keys.
func (b *Backend) rebuildListFilter() (err error) {
	f := &b.lists
	f.reset()
	it, err := b.iterBelow(keyGroupStart(b.kgs.Start), keyGroupStart(b.kgs.End+1))
	if err != nil {
		return err
	}
	defer b.closeIter(it, &err)
	var last []byte
	for _, s := range b.states {
		if !b.isList[s.id] {
			continue
		}
		for kg := b.kgs.Start; kg <= b.kgs.End; kg++ {
			start := appendPrefix(nil, kg, s.id)
			for ok := it.SeekGE(start); ok && bytes.HasPrefix(it.Key(), start); ok = it.Next() {
				k := it.Key()
				if len(k) < prefixLen+seqLen {
					continue
				}
				if p := k[:len(k)-seqLen]; !bytes.Equal(p, last) {
					last = append(last[:0], p...)
					f.add(p)
				}
			}
			if f.added > listFilterCap/2 {
				f.off = true
				return it.Error()
			}
		}
	}
	return it.Error()
}
