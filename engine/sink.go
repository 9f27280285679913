package engine

import (
	"context"
	"fmt"

	"github.com/stateproc/stateproc/engine/internal/flow"
	"github.com/stateproc/stateproc/savepoint"
)

// Sink writes a stream out of the job with exactly-once effect. What a
// subtask writes between two checkpoints is one transaction: pre-committed
// at the checkpoint's barrier, recorded in the checkpoint, and committed
// only when the checkpoint completes. After a failure the job restarts from
// the last completed checkpoint and Recover commits what that checkpoint
// had pre-committed and throws away everything later.
type Sink[T any] interface {
	// Recover runs once per run, before any subtask starts, with the
	// transactions the restored checkpoint recorded (none on a fresh start).
	Recover(ctx context.Context, pending [][]byte) error
	// NewWriter returns the writer of one subtask; ctx is the subtask's,
	// done when the job stops or fails, as is the ctx of every call of the
	// writer.
	NewWriter(ctx context.Context, w WriterContext) (SinkWriter[T], error)
}

// WriterContext tells a sink writer where it runs. Together, Subtask and
// Epoch name transactions uniquely and reproducibly: a run restored from
// checkpoint n has epoch n, and every transaction an earlier run committed
// was begun in an earlier epoch.
type WriterContext struct {
	Subtask int
	Epoch   uint64
}

// SinkWriter is one subtask's writer.
type SinkWriter[T any] interface {
	Write(ctx context.Context, v T, eventTime int64) error
	// PreCommit ends the current transaction and returns a handle from
	// which Commit or Recover can finish it.
	PreCommit(ctx context.Context) ([]byte, error)
	// Commit makes a pre-committed transaction visible. It must be
	// idempotent: after a failure it may run again.
	Commit(ctx context.Context, txn []byte) error
	Close() error
}

const sinkStateName = "pending-transactions"

const pendingTxnSchema = `{"type":"record","name":"PendingTransaction","namespace":"stateproc.engine","fields":[
 {"name":"checkpoint","type":"long"},
 {"name":"txn","type":"bytes"}]}`

type pendingTxn struct {
	Checkpoint int64  `avro:"checkpoint"`
	Txn        []byte `avro:"txn"`
}

var pendingTxnSerializer = mustAvro[pendingTxn](pendingTxnSchema)

// ToSink ends s in sink. The sink keeps its pre-committed transactions in
// operator state, so it needs a UID.
func ToSink[T any](s Stream[T], sink Sink[T], opts ...OperatorOption) {
	n := s.job.addNode(sinkNode, "sink", opts)
	n.stateful = true
	n.opState = append(n.opState, operatorStateSpec{name: sinkStateName, distribution: savepoint.Union, element: pendingTxnSerializer})
	connect(s, n, forwardEdgeFor(s.node, n), 0, nil)
	n.recover = func(ctx context.Context, saved [][]byte) error {
		var txns [][]byte
		for _, e := range saved {
			p, err := pendingTxnSerializer.Decode(e)
			if err != nil {
				return fmt.Errorf("sink %s: restored transaction: %w", n.label(), err)
			}
			txns = append(txns, p.Txn)
		}
		return sink.Recover(ctx, txns)
	}
	n.run = func(t *task) error { return runSink(t, sink) }
}

// forwardEdgeFor connects operators of equal parallelism one to one and
// spreads records round-robin otherwise.
func forwardEdgeFor(from, to *node) edgeKind {
	if from.parallelism == to.parallelism {
		return forwardEdge
	}
	return rebalanceEdge
}

func runSink[T any](t *task, sink Sink[T]) error {
	var epoch uint64
	if t.att.restore != nil {
		epoch = t.att.restore.src.Metadata().ID
	}
	w, err := sink.NewWriter(t.ctx, WriterContext{Subtask: t.subtask, Epoch: epoch})
	if err != nil {
		return t.errorf("open sink: %w", err)
	}
	defer w.Close()
	var pending []pendingTxn
	t.snapshotOp = func(cp *checkpoint) (map[string][][]byte, error) {
		txn, err := w.PreCommit(t.ctx)
		if err != nil {
			return nil, err
		}
		pending = append(pending, pendingTxn{Checkpoint: int64(cp.ID), Txn: txn})
		var list [][]byte
		for _, p := range pending {
			b, err := pendingTxnSerializer.Append(nil, p)
			if err != nil {
				return nil, err
			}
			list = append(list, b)
		}
		return map[string][][]byte{sinkStateName: list}, nil
	}
	commitUpTo := func(id uint64) error {
		kept := pending[:0]
		for _, p := range pending {
			if uint64(p.Checkpoint) > id {
				kept = append(kept, p)
				continue
			}
			if err := w.Commit(t.ctx, p.Txn); err != nil {
				return t.errorf("commit: %w", err)
			}
		}
		pending = kept
		return nil
	}
	latest, changed := t.att.coord.LastCompleted()
	g := flow.NewGate[*checkpoint](t.ctx, changed)
	addInputs[T](t, g, 0)
	var final uint64
	for {
		ch, v, err := g.Next()
		if err != nil {
			return err
		}
		if ch == flow.NotifyChannel {
			latest, changed = t.att.coord.LastCompleted()
			g.SetNotify(changed)
			if err := commitUpTo(latest); err != nil {
				return err
			}
			continue
		}
		b := v.(*batch[T])
		for i := range b.recs {
			if err := w.Write(t.ctx, b.recs[i].v, b.recs[i].ts); err != nil {
				return t.errorf("write: %w", err)
			}
		}
		if b.ctl.Kind == flow.NoControl {
			continue
		}
		r := g.OnControl(ch, b.ctl)
		if r.Aligned != nil {
			if err := t.snapshot(r.Aligned); err != nil {
				return err
			}
			if r.Aligned.Final {
				final = r.Aligned.ID
			}
		}
		if r.Ended {
			if final == 0 {
				// A bounded job that ends without a savepoint or a
				// checkpoint root commits everything it wrote.
				txn, err := w.PreCommit(t.ctx)
				if err != nil {
					return t.errorf("pre-commit: %w", err)
				}
				pending = append(pending, pendingTxn{Txn: txn})
				return commitUpTo(^uint64(0))
			}
			for latest < final {
				select {
				case <-changed:
					latest, changed = t.att.coord.LastCompleted()
				case <-t.ctx.Done():
					return nil
				}
			}
			return commitUpTo(latest)
		}
	}
}
