package chkstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stateproc/stateproc/storage"
)

// HoldName is the file, under the checkpoint root, by which a run holds
// the root while it writes checkpoints there: a lock on disk, a lease in a
// bucket (see storage.Hold).
const HoldName = "_lease"

// ErrRootHeld is wrapped by the error of a run whose checkpoint root
// another live run holds, at its start, or which lost the hold while it
// ran.
var ErrRootHeld = errors.New("engine: the checkpoint root is held by another run")

// RootHold is a run's hold of its checkpoint root, from its first attempt
// to its end. Two runs at once in one root would take each other's
// checkpoint numbers, delete each other's files, and count each other's
// checkpoints as their own.
type RootHold struct {
	term time.Duration
	hold *storage.Hold
	// bucket is the root's connection, when it lies in a bucket.
	bucket storage.DirCloser
}

// HoldRoot takes the hold of the checkpoint root, a local path or a bucket
// URL, where a lease has the term given. Another run's live hold fails it
// with ErrRootHeld; in a bucket, the lease of a run that died without
// releasing it is waited out first (see storage.TakeHold).
func HoldRoot(ctx context.Context, root string, term time.Duration) (*RootHold, error) {
	rh := &RootHold{term: term}
	d := storage.LocalDir(root)
	if InBucket(root) {
		b, err := storage.OpenDir(ctx, root, storage.Options{})
		if err != nil {
			return nil, fmt.Errorf("engine: checkpoint root: %w", err)
		}
		d, rh.bucket = b, b
	}
	hold, err := storage.TakeHold(ctx, d, HoldName, storage.HoldOptions{Term: term})
	if err != nil {
		rh.close()
		if errors.Is(err, storage.ErrHeld) {
			return nil, fmt.Errorf("%w: %w", ErrRootHeld, err)
		}
		return nil, fmt.Errorf("engine: checkpoint root: %w", err)
	}
	rh.hold = hold
	return rh, nil
}

// Lapsed reports whether err, an attempt's, says that the run's lease
// lapsed (its renewals failed for half its term) rather than passed to
// another run: a restart may then take the root again (Retake).
func Lapsed(err error) bool {
	return errors.Is(err, ErrRootHeld) && !Taken(err)
}

// Taken reports whether err says that another run took the root's lease,
// rather than that the store could not tell.
func Taken(err error) bool { return errors.Is(err, storage.ErrHeld) }

// Retake takes the root back after the run's lease lapsed, if no other run
// took it meanwhile (storage.Hold.Resume). A store that still fails is
// tried again for up to two terms; another run's lease fails it with
// ErrRootHeld.
func (h *RootHold) Retake(ctx context.Context) error {
	until := time.Now().Add(2 * h.term)
	for {
		rctx, cancel := context.WithTimeout(ctx, h.term/2)
		err := h.hold.Resume(rctx)
		cancel()
		switch {
		case errors.Is(err, storage.ErrHeld):
			return fmt.Errorf("%w: %w", ErrRootHeld, err)
		case err == nil || ctx.Err() != nil || time.Now().After(until):
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(h.term / 10):
		}
	}
}

// under returns a context for a write or delete under the root, which
// ends when the hold may have passed to another run, or fails with
// ErrRootHeld once it may have. A nil hold, a run's that has no root,
// gives ctx.
func (h *RootHold) under(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if h == nil {
		return ctx, func() {}, nil
	}
	hctx, cancel, err := h.hold.Under(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%w, or may be now: %w; this run writes no more there (%w)", ErrRootHeld, err, errWithheld)
	}
	return hctx, cancel, nil
}

// errWithheld marks the errors of requests not made for want of the hold.
var errWithheld = errors.New("nothing sent")

// Withheld reports whether err says that a write was not made at all for
// want of the root's hold: a checkpoint so refused is not there, and a
// _metadata of its number is another run's.
func Withheld(err error) bool { return errors.Is(err, errWithheld) }

// Check reports whether the run holds the root still: nil, or under's
// error.
func (h *RootHold) Check(ctx context.Context) error {
	_, cancel, err := h.under(ctx)
	if err == nil {
		cancel()
	}
	return err
}

// Release gives the root up for the next run.
func (h *RootHold) Release(ctx context.Context) error {
	if err := errors.Join(h.hold.Release(ctx), h.close()); err != nil {
		return fmt.Errorf("engine: checkpoint root: %w", err)
	}
	return nil
}

func (h *RootHold) close() error {
	if h.bucket == nil {
		return nil
	}
	return h.bucket.Close()
}
