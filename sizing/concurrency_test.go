package sizing

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
)

// gatheringSource holds the first read of each state until iterators of
// two states are open at once, or a while has passed, and records whether
// they were.
type gatheringSource struct {
	savepoint.Source
	mu       sync.Mutex
	started  map[savepoint.StateRef]bool
	open     map[savepoint.StateRef]int
	together chan struct{}
	met      bool
}

func (s *gatheringSource) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	s.mu.Lock()
	first := !s.started[ref]
	s.started[ref] = true
	s.open[ref]++
	if len(s.open) >= 2 && !s.met {
		s.met = true
		close(s.together)
	}
	s.mu.Unlock()
	if first {
		select {
		case <-s.together:
		case <-time.After(3 * time.Second):
		}
	}
	return &closing{EntryIterator: s.Source.Entries(ctx, ref, kgs), close: func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.open[ref]--; s.open[ref] == 0 {
			delete(s.open, ref)
		}
	}}
}

// closing calls close once it is closed.
type closing struct {
	savepoint.EntryIterator
	close func()
	done  bool
}

func (it *closing) Close() error {
	if !it.done {
		it.done = true
		it.close()
	}
	return it.EntryIterator.Close()
}

// MeasureSavepoint measures several states at once (a state's first read
// waits until a second state is read too, and gives up after a while),
// and measures each as it does alone.
func TestStatesAreMeasuredTogether(t *testing.T) {
	r, dir := writeLeakSavepoint(t)
	ctx := context.Background()
	src := &gatheringSource{Source: r, started: map[savepoint.StateRef]bool{}, open: map[savepoint.StateRef]int{}, together: make(chan struct{})}
	job, err := MeasureSavepoint(ctx, src, dir, MeasureOptions{Now: leakNow})
	must(t, err)
	if !src.met {
		t.Errorf("%d states read, never two at once", len(src.started))
	}
	for _, op := range job.Operators {
		for _, st := range op.States {
			alone, err := MeasureSavepoint(ctx, r, dir, MeasureOptions{Now: leakNow, Operator: op.UID})
			must(t, err)
			for _, a := range alone.Operators[0].States {
				got, err := json.Marshal(st)
				must(t, err)
				want, err := json.Marshal(a)
				must(t, err)
				if a.Name == st.Name && !bytes.Equal(got, want) {
					t.Errorf("%s %s measured with the others: %s; alone: %s", op.UID, st.Name, got, want)
				}
			}
		}
	}
}
