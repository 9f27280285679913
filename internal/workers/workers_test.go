package workers

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestRunDoesEveryItemOnce(t *testing.T) {
	for _, tc := range []struct{ n, workers int }{{0, 4}, {1, 4}, {100, 3}, {5, 0}, {7, 7}} {
		seen := make([]atomic.Int32, tc.n)
		var mu sync.Mutex
		used := map[int]bool{}
		err := Run(context.Background(), tc.n, tc.workers, func(_ context.Context, w, i int) error {
			seen[i].Add(1)
			mu.Lock()
			used[w] = true
			mu.Unlock()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range seen {
			if c := seen[i].Load(); c != 1 {
				t.Errorf("n %d workers %d: item %d done %d times", tc.n, tc.workers, i, c)
			}
		}
		limit := tc.workers
		if limit <= 0 {
			limit = Default()
		}
		for w := range used {
			if w < 0 || w >= min(limit, tc.n) {
				t.Errorf("n %d workers %d: worker number %d", tc.n, tc.workers, w)
			}
		}
	}
}

func TestRunStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	var after atomic.Int32
	err := Run(context.Background(), 10_000, 2, func(ctx context.Context, _, i int) error {
		if i == 10 {
			return boom
		}
		if i > 10 && ctx.Err() == nil {
			after.Add(1)
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want boom", err)
	}
	// The other worker may finish the item it holds, and take a few more
	// before it sees the cancellation, but not the thousands left.
	if n := after.Load(); n > 100 {
		t.Errorf("%d items started after the error", n)
	}
}
