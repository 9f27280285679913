package pebblebackend

import "encoding/binary"

// writeCache holds the latest state writes in Go maps in front of the write
// batch. Most state of a stream job lives briefly: a request open until it
// completes, the records pending until the watermark passes their time, a
// timer until it fires. Held here, a write that a later write of the same key
// overwrites or deletes never reaches the batch or the memtable, and a read
// of it costs a map lookup instead of a seek through the batch's and the
// memtable's skiplists.
//
// It has two generations. Writes go into the young one, taking their key out
// of the old one; when the young one reaches cacheGenLimit bytes the old one
// is spilled into the write batch and the young one becomes the old, so every
// write stays at least one generation before it is spilled and memory stays
// below two generations. Everything is spilled before an iterator over state
// is opened, since iterators read the batch and the database, and before
// every commit that a snapshot, checkpoint or restore needs. Timers bypass
// this cache for one of their own per timer service and key group
// (timercache.go), so that the timer services' iterators spill only the
// key group they read; the TTL sweep spills only the writes of the state it sweeps, and
// the reverse seek for a list's end none (see listEnds).
//
// An entry also knows when nothing below it (the old generation, the batch,
// the database) holds its key: after a read found nothing there, or when the
// entry it replaced in the old generation knew it. A deletion of such a key
// is then spilled as nothing at all, which is exact: whatever writes below
// the cache around it (a restore, a sweep, a range deletion) runs after
// everything has been spilled, when the cache is empty.
type writeCache struct {
	young, old map[string]cached
	youngBytes int
}

type cached struct {
	val []byte
	// present says that the key holds val; otherwise it holds nothing.
	present bool
	// absentBelow says that nothing below this generation holds the key.
	absentBelow bool
}

// cacheGenLimit bounds the bytes of one generation, counting keys, values
// and cachedOverhead per entry. A larger generation absorbs writes that live
// longer, but spills in larger bursts.
const cacheGenLimit = 1 << 20

// cachedOverhead approximates what the map spends per entry besides the
// key's and the value's bytes.
const cachedOverhead = 64

// lookup finds the cached state of key k.
func (c *writeCache) lookup(k []byte) (cached, bool) {
	if e, ok := c.young[string(k)]; ok {
		return e, true
	}
	e, ok := c.old[string(k)]
	return e, ok
}

// put records a write of k: v when present, a deletion otherwise. It reports
// whether the young generation is full.
func (c *writeCache) put(k, v []byte, present bool) bool {
	if c.young == nil {
		c.young, c.old = make(map[string]cached), make(map[string]cached)
	}
	if e, ok := c.young[string(k)]; ok {
		c.youngBytes += len(v) - len(e.val)
		e.val, e.present = append(e.val[:0], v...), present
		c.young[string(k)] = e
		return c.youngBytes >= cacheGenLimit
	}
	e := cached{present: present}
	if o, ok := c.old[string(k)]; ok {
		delete(c.old, string(k))
		e.absentBelow, e.val = o.absentBelow, o.val[:0]
	}
	e.val = append(e.val, v...)
	c.young[string(k)] = e
	c.youngBytes += len(k) + len(v) + cachedOverhead
	return c.youngBytes >= cacheGenLimit
}

// noteAbsent records that nothing below the cache holds k, which a read has
// just found. It reports whether the young generation is full.
func (c *writeCache) noteAbsent(k []byte) bool {
	if c.young == nil {
		c.young, c.old = make(map[string]cached), make(map[string]cached)
	}
	c.young[string(k)] = cached{absentBelow: true}
	c.youngBytes += len(k) + cachedOverhead
	return c.youngBytes >= cacheGenLimit
}

func (c *writeCache) empty() bool { return len(c.young) == 0 && len(c.old) == 0 }

// cachedWrite puts a write into the cache and rotates its generations when
// the young one is full.
func (b *Backend) cachedWrite(k, v []byte, present bool) error {
	if b.cache.put(k, v, present) {
		return b.rotate()
	}
	return nil
}

// rotate spills the old generation into the write batch and makes the young
// one the old.
func (b *Backend) rotate() error {
	c := &b.cache
	if err := b.spill(&c.old); err != nil {
		return err
	}
	c.old, c.young = c.young, c.old
	c.youngBytes = 0
	return nil
}

// spillAll empties the cache into the write batch, the old generation first,
// so that the batch and the database hold every write.
func (b *Backend) spillAll() error {
	c := &b.cache
	if c.empty() {
		return nil
	}
	if err := b.spill(&c.old); err != nil {
		return err
	}
	if err := b.spill(&c.young); err != nil {
		return err
	}
	c.youngBytes = 0
	return nil
}

// spill writes one generation into the write batch, committing it whenever it
// is full and no iterator is open, and empties the generation. It must not
// commit through commitWrites, which spills.
func (b *Backend) spill(genp *map[string]cached) error {
	gen := *genp
	if len(gen) == 0 {
		return nil
	}
	for k, e := range gen {
		b.spillKey = append(b.spillKey[:0], k...)
		if err := b.spillEntry(b.spillKey, e); err != nil {
			return err
		}
	}
	// A map keeps its size when cleared, and ranging over it costs that
	// size even when it holds little, as it does when the spills come
	// from iterators opened a few writes apart: a large one is made anew.
	if len(gen) > spillReuseMax {
		*genp = make(map[string]cached)
	} else {
		clear(gen)
	}
	return nil
}

// spillReuseMax is the most entries a spilled generation may have held for
// its map to be kept.
const spillReuseMax = 256

// spillEntry writes the cached state e of key k into the write batch,
// committing it when it is full and no iterator is open.
func (b *Backend) spillEntry(k []byte, e cached) error {
	var err error
	switch {
	case e.present:
		b.noteBelow(k)
		err = b.wb.Set(k, e.val, nil)
	case !e.absentBelow:
		err = b.wb.Delete(k, nil)
	}
	if err == nil && b.full() && b.openIters == 0 {
		err = b.commitBatch()
	}
	return err
}

// spillList moves the elements of the list with prefix p of the sequences
// written out of the cache into the write batch.
func (b *Backend) spillList(p string, written seqRange) error {
	c := &b.cache
	for seq := written.from; seq < written.to; seq++ {
		b.spillKey = binary.BigEndian.AppendUint64(append(b.spillKey[:0], p...), seq)
		if e, ok := c.young[string(b.spillKey)]; ok {
			delete(c.young, string(b.spillKey))
			c.youngBytes -= len(b.spillKey) + len(e.val) + cachedOverhead
			if err := b.spillEntry(b.spillKey, e); err != nil {
				return err
			}
		} else if e, ok := c.old[string(b.spillKey)]; ok {
			delete(c.old, string(b.spillKey))
			if err := b.spillEntry(b.spillKey, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// spillState moves the cached writes of the state with id out of the cache
// into the write batch.
func (b *Backend) spillState(id uint16) error {
	c := &b.cache
	for _, young := range []bool{false, true} {
		gen := c.old
		if young {
			gen = c.young
		}
		for k, e := range gen {
			if len(k) < prefixLen || binary.BigEndian.Uint16([]byte(k[2:prefixLen])) != id {
				continue
			}
			b.spillKey = append(b.spillKey[:0], k...)
			if err := b.spillEntry(b.spillKey, e); err != nil {
				return err
			}
			delete(gen, k)
			if young {
				c.youngBytes -= len(k) + len(e.val) + cachedOverhead
			}
		}
	}
	return nil
}
