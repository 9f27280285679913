package compat

import (
	"fmt"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// CheckKeyed decides the restore of a savepoint operator's keyed states and
// timer services into those a job declares for it. The engine's backends
// call it for the operator they restore.
func CheckKeyed(saved *savepoint.Operator, states []savepoint.KeyedState, timers []savepoint.TimerService, opts Options) []Finding {
	fs := match(saved.UID, KeyedState, opts,
		names(saved.States, func(s savepoint.KeyedState) string { return s.Name }),
		names(states, func(s savepoint.KeyedState) string { return s.Name }),
		func(i, j int) serializers.Compatibility { return CheckState(&saved.States[i], &states[j]) })
	return append(fs, match(saved.UID, TimerService, opts,
		names(saved.Timers, func(t savepoint.TimerService) string { return t.Name }),
		names(timers, func(t savepoint.TimerService) string { return t.Name }),
		func(i, j int) serializers.Compatibility {
			return mustStay("namespace", saved.Timers[i].Namespace, timers[j].Namespace)
		})...)
}

// CheckState decides the restore of one keyed state into the declared one
// of the same name.
func CheckState(saved, declared *savepoint.KeyedState) serializers.Compatibility {
	if saved.Kind != declared.Kind {
		return serializers.Compatibility{Verdict: serializers.Incompatible,
			Reason: fmt.Sprintf("state kind changed from %s to %s", saved.Kind, declared.Kind)}
	}
	if c := mustStay("namespace", saved.Namespace, declared.Namespace); c.Verdict != serializers.CompatibleAsIs {
		return c
	}
	if saved.Kind == savepoint.Map {
		if c := mustStay("map key", saved.MapKey, declared.MapKey); c.Verdict != serializers.CompatibleAsIs {
			return c
		}
	}
	if (saved.TTL == nil) == (declared.TTL == nil) {
		// The TTL timestamp stays: the reason is about the values alone.
		return serializers.Check(saved.Value, declared.Value)
	}
	return serializers.Check(saved.StoredValue(), declared.StoredValue())
}

// Converter returns the rewrite of a stored value of the saved state into
// the declared one, or nil when the bytes stay as they are. now is the
// last-modified time given to every value when TTL is turned on. The pair
// must not be incompatible.
func Converter(saved, declared *savepoint.KeyedState, now int64) (serializers.Migrate, error) {
	from, to := saved.StoredValue(), declared.StoredValue()
	switch c := serializers.Check(from, to); c.Verdict {
	case serializers.CompatibleAsIs:
		return nil, nil
	case serializers.Incompatible:
		return nil, fmt.Errorf("%w: %s", ErrIncompatible, c.Reason)
	}
	return serializers.Migrator(from, to, serializers.MigrateOptions{Now: now})
}

// mustStay accepts only a serializer the new one reads as is: what the
// engine restores without migrating, and what orders or places keys.
func mustStay(what string, old, new serializers.Snapshot) serializers.Compatibility {
	c := serializers.Check(old, new)
	if c.Verdict == serializers.CompatibleAsIs {
		return c
	}
	return serializers.Compatibility{Verdict: serializers.Incompatible, Reason: what + " serializer changed: " + c.Reason}
}
