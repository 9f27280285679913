package serializers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stateproc/stateproc/internal/avrobin"
)

// Verdict is how a new serializer relates to the data an old one wrote, as
// Flink's TypeSerializerSchemaCompatibility.
type Verdict uint8

const (
	// CompatibleAsIs: the new serializer reads the old bytes unchanged.
	CompatibleAsIs Verdict = iota + 1
	// CompatibleAfterMigration: every old value can be rewritten for the
	// new serializer (Migrator).
	CompatibleAfterMigration
	// Incompatible: some old values have no meaning for the new serializer.
	Incompatible
)

func (v Verdict) String() string {
	switch v {
	case CompatibleAsIs:
		return "compatible as is"
	case CompatibleAfterMigration:
		return "compatible after migration"
	case Incompatible:
		return "incompatible"
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// Compatibility is a verdict and, unless the verdict is CompatibleAsIs, why.
type Compatibility struct {
	Verdict Verdict
	Reason  string
	// DataDependent qualifies CompatibleAfterMigration: some values the old
	// serializer can write have no reading in the new one (a union branch
	// the new schema removed), so whether the data migrates is known only
	// by reading it. The migration of such a value fails with
	// ErrUnreadable.
	DataDependent bool
}

func (c Compatibility) String() string {
	if c.Reason == "" {
		return c.Verdict.String()
	}
	return c.Verdict.String() + ": " + c.Reason
}

var asIs = Compatibility{Verdict: CompatibleAsIs}

func afterMigration(format string, args ...any) Compatibility {
	return Compatibility{Verdict: CompatibleAfterMigration, Reason: fmt.Sprintf(format, args...)}
}

func incompatible(format string, args ...any) Compatibility {
	return Compatibility{Verdict: Incompatible, Reason: fmt.Sprintf(format, args...)}
}

// worst keeps the worse verdict with its reason. Two verdicts alike make
// one, with both reasons: every incompatibility is named, and the second
// migration may be the one that depends on the data.
func worst(a, b Compatibility) Compatibility {
	switch {
	case b.Verdict > a.Verdict:
		return b
	case b.Verdict == a.Verdict && b.Verdict != CompatibleAsIs:
		a.Reason += "; " + b.Reason
		a.DataDependent = a.DataDependent || b.DataDependent
	}
	return a
}

func (c Compatibility) in(where string) Compatibility {
	if c.Reason != "" {
		c.Reason = where + ": " + c.Reason
	}
	return c
}

// Check says whether the serializer new can read what old wrote. For Avro
// the reference is the specification's schema resolution, stricter on
// logical types; a map's key must stay as is, since a key whose bytes
// change would move or merge entries.
func Check(old, new Snapshot) Compatibility {
	return check(old, new, 1, 1)
}

func check(old, new Snapshot, oldDepth, newDepth int) Compatibility {
	if err := checkShape(old, oldDepth); err != nil {
		return incompatible("old serializer: %s", shapeProblem(err))
	}
	if err := checkShape(new, newDepth); err != nil {
		return incompatible("new serializer: %s", shapeProblem(err))
	}
	switch {
	case old.Kind == KindTTL && new.Kind != KindTTL:
		return worst(afterMigration("TTL turned off"), check(old.Args[0], new, oldDepth+1, newDepth))
	case new.Kind == KindTTL && old.Kind != KindTTL:
		return worst(afterMigration("TTL turned on"), check(old, new.Args[0], oldDepth, newDepth+1))
	case old.Kind != new.Kind:
		return incompatible("serializer changed from %s to %s", old, new)
	}
	arg := func(i int) Compatibility { return check(old.Args[i], new.Args[i], oldDepth+1, newDepth+1) }
	switch old.Kind {
	case KindAvro:
		return checkAvro(old.Schema, new.Schema)
	case KindList:
		return arg(0).in("list element")
	case KindNullable:
		return arg(0).in("nullable element")
	case KindTTL:
		return arg(0).in("ttl value")
	case KindMap:
		c := arg(1).in("map value")
		if k := arg(0); k.Verdict != CompatibleAsIs {
			c = worst(incompatible("map key serializer changed: %s", k.Reason), c)
		}
		return c
	case KindTimer:
		// Timers are ordered and hashed by their bytes: both parts stay.
		c := asIs
		for i, part := range []string{"key", "namespace"} {
			if p := arg(i); p.Verdict != CompatibleAsIs {
				c = worst(c, incompatible("timer %s serializer changed: %s", part, p.Reason))
			}
		}
		return c
	}
	return asIs
}

func checkAvro(old, new string) Compatibility {
	w, _, err := avrobin.ParseSchema(old)
	if err != nil {
		return incompatible("old %v", err)
	}
	r, compact, err := avrobin.ParseSchema(new)
	if err != nil {
		return incompatible("new %v", err)
	}
	defs, err := avrobin.FieldDefaults(compact)
	if err != nil {
		return incompatible("new %v", err)
	}
	p, err := compileAvro(w, r, defs)
	switch {
	case err != nil:
		return incompatible("%v", err)
	case p.same:
		return asIs
	case len(p.changes) == 0 && len(p.unreadable) == 0:
		return afterMigration("avro schema changed")
	}
	// The changes that make the migration depend on the data come first.
	c := afterMigration("%s", strings.Join(slices.Concat(p.unreadable, p.changes), "; "))
	c.DataDependent = len(p.unreadable) > 0
	return c
}

// shapeProblem is what checkShape found, without the sentinel's words: a
// reason is read by people, who know the serializer is malformed.
func shapeProblem(err error) string {
	return strings.TrimPrefix(err.Error(), ErrSnapshot.Error()+": ")
}
