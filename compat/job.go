package compat

import (
	"fmt"
	"strings"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// Declared is one operator as a job declares it (its manifest entry).
type Declared struct {
	savepoint.Operator
	// MaxParallelismSet: the job fixed its max parallelism. Otherwise a
	// restore adopts the savepoint's.
	MaxParallelismSet bool
}

// Options are the restore's switches.
type Options struct {
	// AllowNonRestoredState drops what the job no longer declares instead
	// of refusing the restore.
	AllowNonRestoredState bool
}

// CheckJob decides the restore of a savepoint into a job: for each
// savepoint operator in order, its findings (CheckOperator) or, when the job
// does not have it, one unclaimed finding; then one New finding per job
// operator the savepoint lacks.
func CheckJob(meta *savepoint.Metadata, declared []Declared, opts Options) []Finding {
	byUID := make(map[string]*Declared, len(declared))
	for i := range declared {
		byUID[declared[i].UID] = &declared[i]
	}
	var fs []Finding
	for i := range meta.Operators {
		saved := &meta.Operators[i]
		if d, ok := byUID[saved.UID]; ok {
			fs = append(fs, CheckOperator(saved, d, opts)...)
			continue
		}
		fs = append(fs, unclaimed(Finding{Operator: saved.UID, What: Operator, Saved: -1, Declared: -1}, opts))
	}
	for i := range declared {
		if _, ok := meta.Operator(declared[i].UID); !ok {
			fs = append(fs, Finding{Operator: declared[i].UID, What: Operator, Verdict: New, Saved: -1, Declared: -1})
		}
	}
	return fs
}

// CheckOperator decides the restore of a savepoint operator into the job's
// operator of the same uid: the operator itself first, then its keyed
// states and timer services (CheckKeyed), operator states and broadcast
// states.
func CheckOperator(saved *savepoint.Operator, d *Declared, opts Options) []Finding {
	op := Finding{Operator: saved.UID, What: Operator, Verdict: AsIs, Saved: -1, Declared: -1}
	if reason := operatorProblem(saved, d); reason != "" {
		op.Verdict, op.Reason = Incompatible, reason
	} else {
		op.Reason = strings.Join(operatorChanges(saved, d), "; ")
	}
	fs := []Finding{op}
	fs = append(fs, CheckKeyed(saved, d.States, d.Timers, opts)...)
	fs = append(fs, match(saved.UID, OperatorState, opts,
		names(saved.OperatorStates, func(s savepoint.OperatorState) string { return s.Name }),
		names(d.OperatorStates, func(s savepoint.OperatorState) string { return s.Name }),
		func(i, j int) serializers.Compatibility {
			s, n := &saved.OperatorStates[i], &d.OperatorStates[j]
			c := mustStay("element", s.Element, n.Element)
			if s.Distribution != n.Distribution {
				c = noted(c, []string{fmt.Sprintf("redistribution changed from %v to %v", s.Distribution, n.Distribution)})
			}
			return c
		})...)
	fs = append(fs, match(saved.UID, BroadcastState, opts,
		names(saved.BroadcastStates, func(s savepoint.BroadcastState) string { return s.Name }),
		names(d.BroadcastStates, func(s savepoint.BroadcastState) string { return s.Name }),
		func(i, j int) serializers.Compatibility {
			s, n := &saved.BroadcastStates[i], &d.BroadcastStates[j]
			return both(mustStay("key", s.Key, n.Key), mustStay("value", s.Value, n.Value))
		})...)
	return fs
}

// operatorChanges names what a restore accepts as it is: another
// parallelism (key groups are handed out anew), another name.
func operatorChanges(saved *savepoint.Operator, d *Declared) []string {
	var out []string
	if saved.Name != d.Name && d.Name != "" {
		out = append(out, fmt.Sprintf("name changed from %q to %q", saved.Name, d.Name))
	}
	if saved.Parallelism != d.Parallelism && d.Parallelism > 0 {
		out = append(out, fmt.Sprintf("parallelism changed from %d to %d", saved.Parallelism, d.Parallelism))
	}
	if !d.MaxParallelismSet && d.MaxParallelism != 0 && d.MaxParallelism != saved.MaxParallelism {
		out = append(out, fmt.Sprintf("max parallelism %d kept from the savepoint (the job's default is %d)", saved.MaxParallelism, d.MaxParallelism))
	}
	return out
}

// operatorProblem says why a savepoint operator cannot be restored into the
// job's operator, or is empty.
func operatorProblem(saved *savepoint.Operator, d *Declared) string {
	switch {
	case saved.Keyed() && !d.Keyed():
		return "keyed in the savepoint but not in the job"
	case !saved.Keyed() && d.Keyed() && len(saved.States) > 0:
		return "keyed in the job but not in the savepoint"
	case !saved.Keyed() || !d.Keyed():
		return ""
	case saved.KeyHash != d.KeyHash:
		return fmt.Sprintf("the savepoint's keys are hashed with %v, the job's with %v", saved.KeyHash, d.KeyHash)
	}
	if c := serializers.Check(saved.Key, d.Key); c.Verdict != serializers.CompatibleAsIs {
		return "key serializer changed: " + c.Reason + " (keys cannot be migrated: their bytes decide their key groups)"
	}
	maxP := saved.MaxParallelism
	if d.MaxParallelismSet && d.MaxParallelism != maxP {
		return fmt.Sprintf("the savepoint has max parallelism %d, the job %d (rewrite it with stateproc rescale)", maxP, d.MaxParallelism)
	}
	if d.Parallelism > maxP {
		return fmt.Sprintf("parallelism %d above the savepoint's max parallelism %d (rewrite it with stateproc rescale)", d.Parallelism, maxP)
	}
	return ""
}
