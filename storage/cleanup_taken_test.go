package storage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stateproc/stateproc/storage"
)

// A removal of orphans whose lease another removal takes over while it
// runs stops, removes nothing, and says that another holds the lease: its
// error is ErrLeaseHeld, as at its start.
func TestRemovalWhoseLeaseIsTakenIsErrLeaseHeld(t *testing.T) {
	storage.SetLeaseTiming(t, 100*time.Millisecond, 2*time.Second, 4*time.Second, 20*time.Millisecond)
	ctx := context.Background()
	srv := newBucket(t)
	putObject(t, srv, "sp/orphan", []byte("an orphan"))
	d := openVia(t, srv.Endpoint(), "sp", fastRetries)
	referenced := func(context.Context) ([]string, error) {
		// Meanwhile another removal takes the lease over (written over by
		// hand); this one's next renewal finds it.
		putObject(t, srv, "sp/"+storage.CleanupName, []byte(`{"holder":"other:2","token":"1111111111111111"}`))
		time.Sleep(500 * time.Millisecond)
		return nil, nil
	}
	removed, err := storage.RemoveOrphans(ctx, d, referenced, 0, time.Now())
	t.Logf("RemoveOrphans = %v, %v", removed, err)
	if len(removed) != 0 {
		t.Fatalf("removed %v without the lease", removed)
	}
	if !errors.Is(err, storage.ErrLeaseHeld) {
		t.Errorf("a removal whose lease another took = %v; want ErrLeaseHeld", err)
	}
}
