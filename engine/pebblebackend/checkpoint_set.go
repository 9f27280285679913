package pebblebackend

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
)

// CheckpointSet is the native checkpoints of every subtask of one operator,
// taken together: between them they hold every key group once.
type CheckpointSet []*CheckpointReader

// NewCheckpointSet orders readers by key group and checks that their key
// groups tile the whole range of one max parallelism. The set owns the
// readers once it is made; on an error they stay the caller's.
func NewCheckpointSet(readers ...*CheckpointReader) (CheckpointSet, error) {
	if len(readers) == 0 {
		return nil, errors.New("pebblebackend: no checkpoints")
	}
	s := CheckpointSet(slices.Clone(readers))
	slices.SortFunc(s, func(a, b *CheckpointReader) int { return cmp.Compare(a.ks.KeyGroups.Start, b.ks.KeyGroups.Start) })
	maxP := s[0].ks.MaxParallelism
	next := 0
	for _, r := range s {
		if r.ks.MaxParallelism != maxP {
			return nil, fmt.Errorf("pebblebackend: checkpoints of max parallelism %d and %d", maxP, r.ks.MaxParallelism)
		}
		if r.ks.KeyGroups.Start != next {
			return nil, fmt.Errorf("pebblebackend: checkpoints hold key groups %v, then %v, not the next one, %d", keygroup.Range{Start: 0, End: next - 1}, r.ks.KeyGroups, next)
		}
		next = r.ks.KeyGroups.End + 1
	}
	if next != maxP {
		return nil, fmt.Errorf("pebblebackend: checkpoints hold key groups %v of max parallelism %d", keygroup.Range{Start: 0, End: next - 1}, maxP)
	}
	return s, nil
}

// MaxParallelism is the max parallelism of the checkpoints' databases.
func (s CheckpointSet) MaxParallelism() int { return s[0].ks.MaxParallelism }

// Entries iterates the entries of the named state or timer service in kgs,
// reading from each checkpoint in turn the key groups it holds.
func (s CheckpointSet) Entries(ctx context.Context, name string, kgs keygroup.Range) savepoint.EntryIterator {
	rest := s
	return savepoint.Chain(func() savepoint.EntryIterator {
		for len(rest) > 0 {
			r := rest[0]
			rest = rest[1:]
			if r.ks.KeyGroups.Intersect(kgs).Len() > 0 {
				return r.Entries(ctx, name, kgs)
			}
		}
		return nil
	})
}

// Close closes every checkpoint.
func (s CheckpointSet) Close() error {
	var errs []error
	for _, r := range s {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}
