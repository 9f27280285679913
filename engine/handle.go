package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/stateproc/stateproc/engine/internal/chkstore"
	"github.com/stateproc/stateproc/engine/internal/coord"
)

// Handle is a job that Start has started: it takes savepoints while the
// job runs, stops it with one, cancels it, and waits for its end.
type Handle struct {
	cancel   context.CancelCauseFunc
	requests chan *savepointRequest
	done     chan struct{}
	res      *Result
	err      error
	// hold is the run's hold of its checkpoint root, if it has one.
	hold *chkstore.RootHold

	mu         sync.Mutex
	checkpoint string
}

// ErrCancelled is what Wait returns after Cancel.
var ErrCancelled = errors.New("engine: job cancelled")

// ErrJobEnded is returned for a savepoint asked of a job that ended, or
// failed past its restarts, before it could take it.
var ErrJobEnded = coord.ErrJobEnded

// Start validates the job and the options and starts the job in the
// background. It runs, restarting from its latest checkpoint after a
// failure as Run does, until its sources end or stop, StopWithSavepoint
// stops it, Cancel cancels it, or ctx is done.
func Start(ctx context.Context, j *Job, opts RunOptions) (*Handle, error) {
	if err := prepare(ctx, j, &opts); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	h := &Handle{cancel: cancel, requests: make(chan *savepointRequest), done: make(chan struct{})}
	go func() {
		defer cancel(nil)
		h.res, h.err = h.run(ctx, j, opts)
		close(h.done)
	}()
	return h, nil
}

// Wait waits for the job to end and returns what it did. After Cancel, or
// once the context given to Start is done, the error wraps ErrCancelled or
// the context's cause.
func (h *Handle) Wait() (*Result, error) {
	<-h.done
	return h.res, h.err
}

// Done is closed when the job has ended.
func (h *Handle) Done() <-chan struct{} { return h.done }

// Cancel stops the job at once, without a savepoint: what its sinks have
// not committed is lost, and a restore from its latest checkpoint writes
// it again. It does not wait for the job to end.
func (h *Handle) Cancel() { h.cancel(ErrCancelled) }

// LatestCheckpoint returns the directory of the latest completed periodic
// checkpoint, whichever attempt took it; "" when none has completed.
func (h *Handle) LatestCheckpoint() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.checkpoint
}

func (h *Handle) noteCheckpoint(dir string) {
	h.mu.Lock()
	h.checkpoint = dir
	h.mu.Unlock()
}

// TriggerSavepoint takes a savepoint into dir while the job keeps running
// and returns dir once it is complete. The savepoint is aligned like a
// checkpoint, with barriers through the graph, and written in the
// canonical, self-contained layout whatever the backend; its sinks commit
// what they wrote before it, as at a checkpoint. If ctx is done first, the
// savepoint may still complete.
func (h *Handle) TriggerSavepoint(ctx context.Context, dir string) (string, error) {
	return h.request(ctx, &savepointRequest{Dir: dir})
}

// StopWithSavepoint stops the job with a savepoint into dir, as Flink's
// stop does, and returns dir once the job has ended. Without drain, the
// sources stop at the savepoint's barrier and no final watermark is sent:
// the event-time timers stay in the savepoint, and a job restored from it
// goes on as if it had not stopped. With drain, the sources first send the
// largest watermark, so that every event-time timer fires and its output
// is committed, and then the barrier. A stop that fails leaves the job
// running (restarting it if the failure was the job's).
func (h *Handle) StopWithSavepoint(ctx context.Context, dir string, drain bool) (string, error) {
	if _, err := h.request(ctx, &savepointRequest{Dir: dir, Stop: true, Drain: drain}); err != nil {
		return "", err
	}
	select {
	case <-h.done:
		if h.err != nil {
			return dir, fmt.Errorf("engine: after the savepoint %s: %w", dir, h.err)
		}
		return dir, nil
	case <-ctx.Done():
		return dir, context.Cause(ctx)
	}
}

func (h *Handle) request(ctx context.Context, r *savepointRequest) (string, error) {
	if r.Dir == "" {
		return "", fmt.Errorf("engine: savepoint without a target directory")
	}
	if err := coord.FreeTarget(ctx, r.Dir); err != nil {
		return "", err
	}
	r.Reply = make(chan error, 1)
	select {
	case h.requests <- r:
	case <-h.done:
		return "", ErrJobEnded
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
	select {
	case err := <-r.Reply:
		if err != nil {
			return "", err
		}
		return r.Dir, nil
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}
