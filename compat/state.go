package compat

import (
	"fmt"
	"strings"
	"time"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
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
// of the same name. The reason names every incompatibility, and every
// change accepted (a TTL of another length, say) even when the verdict is
// as is.
func CheckState(saved, declared *savepoint.KeyedState) serializers.Compatibility {
	if saved.Kind != declared.Kind {
		c := incompatible(fmt.Sprintf("state kind changed from %s to %s", saved.Kind, declared.Kind))
		if c2 := mustStay("namespace", saved.Namespace, declared.Namespace); c2.Verdict != serializers.CompatibleAsIs {
			c = both(c, c2)
		}
		return c
	}
	c := serializers.Compatibility{Verdict: serializers.CompatibleAsIs}
	if c2 := mustStay("namespace", saved.Namespace, declared.Namespace); c2.Verdict != serializers.CompatibleAsIs {
		c = both(c, c2)
	}
	if saved.Kind == savepoint.Map {
		if c2 := mustStay("map key", saved.MapKey, declared.MapKey); c2.Verdict != serializers.CompatibleAsIs {
			c = both(c, c2)
		}
	}
	if (saved.TTL == nil) == (declared.TTL == nil) {
		// The TTL timestamp stays: the reason is about the values alone.
		c = both(c, serializers.Check(saved.Value, declared.Value))
	} else {
		c = both(c, serializers.Check(saved.StoredValue(), declared.StoredValue()))
	}
	if saved.TTL != nil && declared.TTL != nil {
		c = noted(c, ttlChanges(saved.TTL, declared.TTL))
	}
	return c
}

func incompatible(reason string) serializers.Compatibility {
	return serializers.Compatibility{Verdict: serializers.Incompatible, Reason: reason}
}

// both is the worse of two verdicts with the reasons of both where they are
// alike (every incompatibility, every migration), else the worse one's.
func both(a, b serializers.Compatibility) serializers.Compatibility {
	switch {
	case b.Verdict > a.Verdict:
		return b
	case b.Verdict < a.Verdict || b.Reason == "":
		return a
	case a.Reason != "":
		b.Reason = a.Reason + "; " + b.Reason
	}
	b.DataDependent = a.DataDependent || b.DataDependent
	return b
}

// noted adds to a verdict's reason the changes it accepts as they are.
func noted(c serializers.Compatibility, notes []string) serializers.Compatibility {
	if len(notes) == 0 || c.Verdict == serializers.Incompatible {
		return c
	}
	if c.Reason != "" {
		notes = append([]string{c.Reason}, notes...)
	}
	c.Reason = strings.Join(notes, "; ")
	return c
}

// ttlChanges names what changed in a state's TTL; none of it changes the
// stored bytes.
func ttlChanges(old, new *ttl.Config) []string {
	var out []string
	if old.TTL != new.TTL {
		out = append(out, fmt.Sprintf("TTL changed from %s to %s", duration(old.TTL), duration(new.TTL)))
	}
	if old.Update != new.Update {
		out = append(out, fmt.Sprintf("TTL update type changed from %v to %v", old.Update, new.Update))
	}
	if old.Visibility != new.Visibility {
		out = append(out, fmt.Sprintf("TTL visibility changed from %v to %v", old.Visibility, new.Visibility))
	}
	if old.CleanupFullSnapshot != new.CleanupFullSnapshot {
		out = append(out, fmt.Sprintf("TTL cleanup in full snapshots turned %s", onOff(new.CleanupFullSnapshot)))
	}
	if old.CleanupIncremental != new.CleanupIncremental {
		out = append(out, fmt.Sprintf("TTL incremental cleanup changed from %d to %d entries per access", old.CleanupIncremental, new.CleanupIncremental))
	}
	if old.SweepBudget != new.SweepBudget {
		out = append(out, fmt.Sprintf("TTL sweep budget changed from %d to %d entries per step", old.SweepBudget, new.SweepBudget))
	}
	return out
}

// duration writes 2h for 2h0m0s and 1m30s for 1m30s.
func duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
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
