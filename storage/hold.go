package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Hold is a writer's exclusive hold of a location for as long as it writes
// there: on disk a lock on a file in the directory, in a bucket a lease
// object under the prefix, renewed in the background (the lease of
// RemoveOrphans, under another name). A second writer that asks for the
// hold while the first has it is refused with ErrHeld.
type Hold struct {
	lock  *FileLock
	lease *lease
}

// HoldOptions tune a Hold. The zero value is ready to use.
type HoldOptions struct {
	// Term is how long a lease in a bucket outlives its last renewal
	// before another may take it for a dead holder's; 0 means two
	// minutes. Its holder renews it every sixth of it and writes nothing
	// under it once half of it has passed since its last renewal.
	Term time.Duration
}

// MinHoldTerm is the shortest HoldOptions.Term: a lease renewed every
// sixth of its term, in a store whose times are whole seconds.
const MinHoldTerm = time.Second

// TakeHold takes the hold of d's location under name, the lock file's or
// lease object's name there; a local directory is made if need be. On
// disk the lock goes with its process, so a held lock is a live holder's
// and the take fails at once. In a bucket a lease outlives a holder that
// died without releasing it: a held lease is watched until its holder has
// not renewed it for the lease's term, and then taken over,
// unless a renewal shows meanwhile that its holder lives, which fails the
// take.
func TakeHold(ctx context.Context, d Dir, name string, opts HoldOptions) (*Hold, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if opts.Term != 0 && opts.Term < MinHoldTerm {
		return nil, fmt.Errorf("storage: a hold's term of %v is shorter than %v", opts.Term, MinHoldTerm)
	}
	var dir string
	switch d := d.(type) {
	case *bucketDir:
		l, err := takeLease(ctx, d.bucketStore, name, timingOf(opts.Term), true, ErrHeld)
		if err != nil {
			return nil, err
		}
		return &Hold{lease: l}, nil
	case *countedLocalDir:
		dir = d.dir()
	case *localDir:
		dir = d.dir()
	default:
		return nil, fmt.Errorf("storage: %s: a hold needs a Dir from OpenDir or LocalDir", d.Location())
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l, err := LockFile(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	return &Hold{lock: l}, nil
}

// Under returns a context for a write or delete made under the hold, and
// its cancel func. In a bucket the context ends when the lease may no
// longer be this holder's (a minute after its last renewal), so that
// neither the request nor a retry of it is sent after that; Under fails
// once that time has passed or another has taken the lease (ErrHeld), and
// from then on. On disk it is ctx.
func (h *Hold) Under(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if h.lease == nil {
		return ctx, func() {}, nil
	}
	return h.lease.hold(ctx)
}

// Resume takes back a hold in a bucket whose lease lapsed (Under failed
// because no renewal had succeeded for half its term) and that no one took
// meanwhile: at once, with a renewal on the condition that the lease is
// still the version this holder wrote last. A lease that another took or
// removed fails it with ErrHeld; another error is the store's, and Resume
// may be called again. On disk, where a lock cannot lapse, it does
// nothing.
func (h *Hold) Resume(ctx context.Context) error {
	if h.lease == nil {
		return nil
	}
	return h.lease.resume(ctx)
}

// Under gives the context of one request that must be made under a hold
// (Hold.Under), and fails once the hold is gone.
type Under func(context.Context) (context.Context, context.CancelFunc, error)

// AbortUnder is t.Abort, for a target written under a hold: in a bucket
// each delete is made under the context under gives for it, and none once
// under fails, so that a writer that lost its hold deletes nothing that
// the next holder may have written under the same names. Its temporary
// uploads, whose random names no other writer uses, go all the same.
func AbortUnder(t Target, under Under) error {
	if bt, ok := t.(*bucketTarget); ok {
		return bt.abort(under)
	}
	return t.Abort()
}

// Release gives the hold up: it removes the lock file, or stops renewing
// the lease and deletes it on the condition that it is still the version
// this holder wrote last. A lease that could not be deleted is an error;
// it lapses by itself.
func (h *Hold) Release(ctx context.Context) error {
	if h.lease == nil {
		return h.lock.Release()
	}
	return h.lease.release(ctx)
}
