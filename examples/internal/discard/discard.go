package discard

import (
	"context"

	"github.com/stateproc/stateproc/engine"
)

// Sink is a sink that drops everything: for runs whose point is the
// state they leave in a savepoint (benchmark inputs, test data), where
// keeping millions of outputs in memory would only cost.
type Sink[T any] struct{}

func (Sink[T]) Recover(context.Context, [][]byte) error { return nil }

func (Sink[T]) NewWriter(context.Context, engine.WriterContext) (engine.SinkWriter[T], error) {
	return discardWriter[T]{}, nil
}

type discardWriter[T any] struct{}

func (discardWriter[T]) Write(context.Context, T, int64) error     { return nil }
func (discardWriter[T]) PreCommit(context.Context) ([]byte, error) { return nil, nil }
func (discardWriter[T]) Commit(context.Context, []byte) error      { return nil }
func (discardWriter[T]) Close() error                              { return nil }
