package snapshotfmt

import (
	"bytes"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
	"github.com/stateproc/stateproc/ttl"
)

// The rules of FORMAT.md that are about the model rather than the bytes live
// here, so that the writer refuses exactly what the reader would reject.

const (
	// maxTTLMillis is the largest TTL whose nanoseconds fit a time.Duration.
	maxTTLMillis = math.MaxInt64 / int64(time.Millisecond)
	// maxCleanupSize bounds the two TTL cleanup counts so that they fit an
	// int on every platform.
	maxCleanupSize = math.MaxInt32
)

// checkTTL checks a TTL configuration as the metadata records it: whole
// milliseconds, so that it reads back exactly as written.
func checkTTL(c *ttl.Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	switch {
	case c.TTL%time.Millisecond != 0:
		return fmt.Errorf("TTL %v is not a whole number of milliseconds", c.TTL)
	case c.CleanupIncremental > maxCleanupSize:
		return fmt.Errorf("incremental cleanup size %d above %d", c.CleanupIncremental, maxCleanupSize)
	case c.SweepBudget > maxCleanupSize:
		return fmt.Errorf("sweep budget %d above %d", c.SweepBudget, maxCleanupSize)
	}
	return nil
}

// checkDataFileName checks a data file name before it is created or opened.
func checkDataFileName(name string) error {
	if err := storage.CheckName(name); err != nil {
		return err
	}
	if name == MetadataName {
		return fmt.Errorf("%w: a data file cannot be named %s", storage.ErrBadName, MetadataName)
	}
	return nil
}

// names detects empty and duplicate names within one set (an operator's
// states, its timer services, ...).
type names map[string]struct{}

func (n names) add(what, name string) error {
	if name == "" {
		return fmt.Errorf("%s has an empty name", what)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%s name %q is not valid UTF-8", what, name)
	}
	if _, dup := n[name]; dup {
		return fmt.Errorf("two %ss are named %q", what, name)
	}
	n[name] = struct{}{}
	return nil
}

func checkOperatorState(s *savepoint.OperatorState, parallelism int) error {
	if s.Distribution != savepoint.EvenSplit && s.Distribution != savepoint.Union {
		return fmt.Errorf("operator state %q: unknown distribution %d", s.Name, s.Distribution)
	}
	if len(s.Subtasks) != parallelism {
		return fmt.Errorf("operator state %q lists %d subtasks, the operator has parallelism %d", s.Name, len(s.Subtasks), parallelism)
	}
	return nil
}

func checkBroadcastOrder(s *savepoint.BroadcastState) error {
	for i := 1; i < len(s.Entries); i++ {
		if bytes.Compare(s.Entries[i-1].Key, s.Entries[i].Key) >= 0 {
			return fmt.Errorf("broadcast state %q: keys not strictly increasing at entry %d", s.Name, i)
		}
	}
	return nil
}

// checkMetadata checks a model about to be written: every rule the reader
// enforces except those about segments, which the writer produces itself.
func checkMetadata(m *savepoint.Metadata) error {
	uids := names{}
	for i := range m.Operators {
		op := &m.Operators[i]
		if err := uids.add("operator", op.UID); err != nil {
			return err
		}
		if err := checkOperator(op); err != nil {
			return fmt.Errorf("operator %q: %w", op.UID, err)
		}
	}
	for _, s := range m.Lineage {
		if !utf8.ValidString(s) {
			return fmt.Errorf("lineage entry %q is not valid UTF-8", s)
		}
	}
	return nil
}

func checkOperator(op *savepoint.Operator) error {
	if !utf8.ValidString(op.Name) {
		return fmt.Errorf("name %q is not valid UTF-8", op.Name)
	}
	if err := keygroup.Validate(op.Parallelism, op.MaxParallelism); err != nil {
		return err
	}
	switch {
	case op.KeyHash == 0 && op.Keyed():
		return fmt.Errorf("key serializer %s without a key hash function", op.Key.Kind)
	case op.KeyHash == keygroup.Murmur3 && !op.Keyed():
		return fmt.Errorf("key hash function %v without a key serializer", op.KeyHash)
	case op.KeyHash != 0 && op.KeyHash != keygroup.Murmur3:
		return fmt.Errorf("unknown key hash function %d", op.KeyHash)
	case !op.Keyed() && (len(op.States) > 0 || len(op.Timers) > 0):
		return fmt.Errorf("a non-keyed operator has keyed states or timer services")
	}
	if op.Keyed() {
		if err := checkSnapshot(op.Key, 1); err != nil {
			return fmt.Errorf("key serializer: %w", err)
		}
	}
	seen := names{}
	for i := range op.States {
		s := &op.States[i]
		if err := seen.add("state", s.Name); err != nil {
			return err
		}
		if err := checkState(s); err != nil {
			return fmt.Errorf("state %q: %w", s.Name, err)
		}
	}
	seen = names{}
	for _, t := range op.Timers {
		if err := seen.add("timer service", t.Name); err != nil {
			return err
		}
		if err := checkSnapshot(t.Namespace, 1); err != nil {
			return fmt.Errorf("timer service %q: namespace serializer: %w", t.Name, err)
		}
	}
	seen = names{}
	for i := range op.OperatorStates {
		s := &op.OperatorStates[i]
		if err := seen.add("operator state", s.Name); err != nil {
			return err
		}
		if err := checkOperatorState(s, op.Parallelism); err != nil {
			return err
		}
		if err := checkSnapshot(s.Element, 1); err != nil {
			return fmt.Errorf("operator state %q: element serializer: %w", s.Name, err)
		}
	}
	seen = names{}
	for i := range op.BroadcastStates {
		s := &op.BroadcastStates[i]
		if err := seen.add("broadcast state", s.Name); err != nil {
			return err
		}
		if err := checkBroadcastOrder(s); err != nil {
			return err
		}
		if err := checkSnapshot(s.Key, 1); err != nil {
			return fmt.Errorf("broadcast state %q: key serializer: %w", s.Name, err)
		}
		if err := checkSnapshot(s.Value, 1); err != nil {
			return fmt.Errorf("broadcast state %q: value serializer: %w", s.Name, err)
		}
	}
	return nil
}

func checkState(s *savepoint.KeyedState) error {
	if !s.Kind.Valid() {
		return fmt.Errorf("unknown kind %d", s.Kind)
	}
	if err := checkSnapshot(s.Namespace, 1); err != nil {
		return fmt.Errorf("namespace serializer: %w", err)
	}
	if s.Kind == savepoint.Map {
		if err := checkSnapshot(s.MapKey, 1); err != nil {
			return fmt.Errorf("map-key serializer: %w", err)
		}
	} else if s.MapKey.Kind != "" || s.MapKey.Schema != "" || len(s.MapKey.Args) > 0 {
		return fmt.Errorf("a %v state has a map-key serializer", s.Kind)
	}
	if err := checkSnapshot(s.Value, 1); err != nil {
		return fmt.Errorf("value serializer: %w", err)
	}
	if s.TTL != nil {
		return checkTTL(s.TTL)
	}
	return nil
}
