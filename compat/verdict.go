package compat

import (
	"fmt"
	"strconv"
)

// Verdict says what a restore does with one operator or state.
type Verdict uint8

const (
	// AsIs: restored unchanged.
	AsIs Verdict = iota + 1
	// AfterMigration: restored with every value rewritten for the job's
	// serializer.
	AfterMigration
	// Incompatible: the restore fails.
	Incompatible
	// New: the job declares it and the savepoint lacks it; it starts empty.
	New
	// Dropped: the savepoint holds it, the job does not, and non-restored
	// state is allowed: it is not restored.
	Dropped
)

var verdictNames = map[Verdict]string{
	AsIs: "compatible as is", AfterMigration: "compatible after migration", Incompatible: "incompatible",
	New: "new", Dropped: "dropped",
}

func (v Verdict) String() string {
	if s, ok := verdictNames[v]; ok {
		return s
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// MarshalText writes the verdict as its String.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// What is the kind of thing a Finding is about.
type What string

const (
	Operator       What = "operator"
	KeyedState     What = "state"
	TimerService   What = "timer service"
	OperatorState  What = "operator state"
	BroadcastState What = "broadcast state"
)

// Finding is the decision about one operator or one of its states.
type Finding struct {
	Operator string
	What     What
	// Name is the state's name; empty for an operator.
	Name    string
	Verdict Verdict
	// Reason says why, unless the verdict is New. For AsIs it names what
	// changed and is accepted as it is (a TTL's length, the parallelism), or
	// is empty.
	Reason string
	// DataDependent qualifies AfterMigration: the values that use what the
	// job's serializer removed cannot be migrated (see
	// serializers.Compatibility), so only reading the data settles it.
	DataDependent bool
	// Unclaimed: the savepoint holds it and the job does not declare it.
	// Its verdict is Incompatible, or Dropped when allowed.
	Unclaimed bool
	// Saved and Declared index the state in the savepoint operator's and
	// the job operator's list of its kind (States, Timers, OperatorStates,
	// BroadcastStates); -1 where it is absent and for operators.
	Saved, Declared int
}

// Where names the operator or state as errors do: operator "a" state "b".
func (f *Finding) Where() string {
	if f.What == Operator {
		return fmt.Sprintf("operator %q", f.Operator)
	}
	return fmt.Sprintf("operator %q %s %q", f.Operator, f.What, f.Name)
}

func (f *Finding) String() string {
	s := f.Where() + ": " + f.Verdict.String()
	if f.Reason != "" {
		s += ": " + f.Reason
	}
	return s
}
