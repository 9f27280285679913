package discard

import "github.com/stateproc/stateproc/engine"

// Sink is a sink that drops everything: for runs whose point is the
// state they leave in a savepoint (benchmark inputs, test data), where
// keeping millions of outputs in memory would only cost.
type Sink[T any] struct{}

func (Sink[T]) Recover([][]byte) error { return nil }

func (Sink[T]) NewWriter(engine.WriterContext) (engine.SinkWriter[T], error) {
	return discardWriter[T]{}, nil
}

type discardWriter[T any] struct{}

func (discardWriter[T]) Write(T, int64) error       { return nil }
func (discardWriter[T]) PreCommit() ([]byte, error) { return nil, nil }
func (discardWriter[T]) Commit([]byte) error        { return nil }
func (discardWriter[T]) Close() error               { return nil }
