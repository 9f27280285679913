package flinkfmt

import "github.com/stateproc/stateproc/savepoint"

// SavepointKind maps a keyed state's kind to the toolkit's model. Folding
// state (removed from Flink) and timer services have no kind there.
func (k Kind) SavepointKind() (savepoint.Kind, bool) {
	switch k {
	case Value:
		return savepoint.Value, true
	case List:
		return savepoint.List, true
	case Map:
		return savepoint.Map, true
	case Reducing:
		return savepoint.Reducing, true
	case Aggregating:
		return savepoint.Aggregating, true
	}
	return 0, false
}

// SavepointDistribution maps an operator list state's mode to the
// toolkit's model; broadcast state is a model of its own there.
func (d Distribution) SavepointDistribution() (savepoint.Distribution, bool) {
	switch d {
	case SplitDistribute:
		return savepoint.EvenSplit, true
	case Union:
		return savepoint.Union, true
	}
	return 0, false
}
