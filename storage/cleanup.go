package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gocloud.dev/gcerrors"
)

// CleanupName is the object that a removal of orphans holds under a bucket
// prefix while it runs: its lease. A run that publishes there waits while
// the lease is held, and then checks that the content-named files it wrote
// are all still there before it writes its marker (see RemoveOrphans).
const CleanupName = "_cleanup"

// ErrLeaseHeld is the error of a removal of orphans at a location where
// another one holds the lease.
var ErrLeaseHeld = errors.New("storage: another removal of orphans is under way there")

// takeCleanupLease takes the lease of st's prefix for a removal of
// orphans; a lease held by a live holder fails with ErrLeaseHeld.
func takeCleanupLease(ctx context.Context, st *bucketStore) (*lease, error) {
	l, err := takeLease(ctx, st, CleanupName, timingOf(0), false, ErrLeaseHeld)
	var held *heldError
	if errors.As(err, &held) {
		return nil, fmt.Errorf("%w: %s; nothing removed", ErrLeaseHeld, held.detail)
	}
	return l, err
}

// awaitCleanup returns once no live removal of orphans holds the lease of
// st's prefix: at once when there is none, else when it is released or
// its holder has stopped renewing it for leaseTerm.
func awaitCleanup(ctx context.Context, st *bucketStore) error {
	for {
		st.c.Requests.Add(1)
		attrs, err := st.b.Attributes(ctx, st.key(CleanupName))
		switch {
		case gcerrors.Code(err) == gcerrors.NotFound:
			return nil
		case err != nil:
			return fmt.Errorf("storage: %s: %w", st.where(CleanupName), err)
		case time.Since(attrs.ModTime) >= leaseTerm+storeTimeGrain:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storage: waiting for the removal of orphans at %s to end: %w", st.loc, context.Cause(ctx))
		case <-time.After(cleanupPoll):
		}
	}
}
