package savepoint

import (
	"context"

	"github.com/stateproc/stateproc/keygroup"
)

// Source is a savepoint or checkpoint, whatever its layout: what restoring
// state and reading it offline need, and nothing about where the bytes lie.
// stateproc's own savepoint format is one implementation
// (snapshotfmt.Reader.Source), the engine's incremental checkpoints another.
type Source interface {
	Metadata() *Metadata
	// Entries iterates the entries of state (or timer service) ref of
	// operator op whose key groups lie in kgs: key group by key group in
	// ascending order, each in the savepoint format's order. ref indexes the
	// operator's States, or is len(States)+i for its timer service i. An
	// operator or ref the source does not have is an error of the iterator.
	Entries(ctx context.Context, op, ref int, kgs keygroup.Range) EntryIterator
}

// EntryIterator streams entries with a sticky error, as archive/tar's
// Reader does: Next until it returns false, then Err.
type EntryIterator interface {
	// Next advances to the next entry; it returns false at the end or on an
	// error.
	Next() bool
	// Entry returns the current entry. It and its slices are valid until the
	// next call of Next.
	Entry() *Entry
	Err() error
	Close() error
}

// Chain iterates the iterators that next returns, one after another, until
// next returns nil; it opens each only when the previous one is done.
func Chain(next func() EntryIterator) EntryIterator { return &chain{next: next} }

type chain struct {
	next func() EntryIterator
	cur  EntryIterator
	err  error
	done bool
}

func (c *chain) Next() bool {
	for c.err == nil && !c.done {
		if c.cur == nil {
			if c.cur = c.next(); c.cur == nil {
				c.done = true
				return false
			}
		}
		if c.cur.Next() {
			return true
		}
		c.err = c.cur.Err()
		if cerr := c.cur.Close(); c.err == nil {
			c.err = cerr
		}
		c.cur = nil
	}
	return false
}

func (c *chain) Entry() *Entry { return c.cur.Entry() }

func (c *chain) Err() error { return c.err }

func (c *chain) Close() error {
	c.done = true
	if c.cur == nil {
		return nil
	}
	err := c.cur.Close()
	c.cur = nil
	return err
}

// Failed returns an iterator that yields no entry and err.
func Failed(err error) EntryIterator { return failed{err} }

type failed struct{ err error }

func (failed) Next() bool    { return false }
func (failed) Entry() *Entry { return nil }
func (f failed) Err() error  { return f.err }
func (failed) Close() error  { return nil }
