package pebblebackend

import (
	"bytes"
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
)

// checkpointCacheSize is the block cache of a checkpoint reader: small,
// because a restore reads each block once, in order, and a job restoring
// from many old subtasks opens a reader for each.
const checkpointCacheSize = 1 << 20

// CheckpointReader reads the state of a native checkpoint as savepoint
// entries, so that it restores into any backend, at any parallelism. The
// database is opened read-only and may be read from several goroutines at
// once.
type CheckpointReader struct {
	db     *pebble.DB
	ks     Keyspace
	byName map[string]StateID
}

// OpenCheckpoint opens the checkpoint whose files lie in dir under Pebble's
// names (CheckpointFile.Name), laid out as ks says. It changes no file;
// Pebble adds its LOCK file to dir.
func OpenCheckpoint(dir string, ks Keyspace) (*CheckpointReader, error) {
	if err := ks.check(); err != nil {
		return nil, fmt.Errorf("pebblebackend: checkpoint %s: %w", dir, err)
	}
	cache := pebble.NewCache(checkpointCacheSize)
	defer cache.Unref() // the database holds its own reference
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, ErrorIfNotExists: true, Cache: cache, Logger: quietLogger{}})
	if err != nil {
		return nil, fmt.Errorf("pebblebackend: open checkpoint %s: %w", dir, err)
	}
	r := &CheckpointReader{db: db, ks: ks, byName: make(map[string]StateID, len(ks.States))}
	for _, s := range ks.States {
		r.byName[s.Name] = s
	}
	return r, nil
}

// Entries iterates the entries of the named state or timer service in the
// key groups of kgs that the checkpoint holds, key group by key group, each
// in the savepoint format's order, with values as stored. Unlike a
// snapshot, it applies no full-snapshot TTL cleanup: a checkpoint holds the
// database as it was.
func (r *CheckpointReader) Entries(ctx context.Context, name string, kgs keygroup.Range) savepoint.EntryIterator {
	s, ok := r.byName[name]
	if !ok {
		return savepoint.Failed(fmt.Errorf("pebblebackend: the checkpoint has no state or timer service %q", name))
	}
	it := &checkpointIter{ctx: ctx, id: s.ID}
	it.kind, _ = s.stateKind() // checked by OpenCheckpoint
	kgs = kgs.Intersect(r.ks.KeyGroups)
	if kgs.Len() == 0 {
		it.done = true
		return it
	}
	it.kg, it.last = kgs.Start, kgs.End
	it.it, it.err = r.db.NewIter(&pebble.IterOptions{
		LowerBound: keyGroupStart(kgs.Start),
		UpperBound: keyGroupStart(kgs.End + 1),
	})
	return it
}

// Close closes the database.
func (r *CheckpointReader) Close() error { return r.db.Close() }

// checkpointIter scans one state key group by key group: one seek to the
// state's prefix in each.
type checkpointIter struct {
	ctx     context.Context
	it      *pebble.Iterator
	id      uint16
	kind    savepoint.Kind
	kg      int
	last    int
	prefix  []byte
	onState bool // it stands on an entry of the state in key group kg
	dec     entryDecoder
	entry   *savepoint.Entry
	n       int
	done    bool
	err     error
}

func (c *checkpointIter) Next() bool {
	if c.err != nil || c.done {
		return false
	}
	if c.n++; c.n%ctxCheckEvery == 0 {
		if c.err = c.ctx.Err(); c.err != nil {
			return false
		}
	}
	var valid bool
	if c.onState {
		valid = c.it.Next()
	} else {
		c.prefix = appendPrefix(c.prefix[:0], c.kg, c.id)
		valid = c.it.SeekGE(c.prefix)
	}
	// Every key of a later key group sorts after the prefix, so an iterator
	// that runs out has nothing more of this state either.
	for valid && !bytes.HasPrefix(c.it.Key(), c.prefix) {
		if c.kg++; c.kg > c.last {
			valid = false
			break
		}
		c.prefix = appendPrefix(c.prefix[:0], c.kg, c.id)
		valid = c.it.SeekGE(c.prefix)
	}
	if !valid {
		c.err = c.it.Error()
		c.done, c.onState = true, false
		return false
	}
	c.onState = true
	if c.entry, c.err = c.dec.decode(c.kind, c.it); c.err != nil {
		c.err = fmt.Errorf("pebblebackend: checkpoint key group %d: %w", c.kg, c.err)
		return false
	}
	return true
}

func (c *checkpointIter) Entry() *savepoint.Entry { return c.entry }

func (c *checkpointIter) Err() error { return c.err }

func (c *checkpointIter) Close() error {
	c.done = true
	if c.it == nil {
		return nil
	}
	err := c.it.Close()
	c.it = nil
	return err
}
