package evolve_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/compat"
	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/evolve"
	"github.com/stateproc/stateproc/rewrite"
)

// A change of the job besides its schemas, and what check and the engine
// make of it.
type jobChange struct {
	name      string
	old, new  func(*jobSchemas)
	allow     bool // --allow-non-restored-state
	what      compat.What
	item      string // the state's name, or the operator's uid
	verdict   compat.Verdict
	reason    string // a part of check's reason, and of the engine's error unless unclaimed
	notClaims bool   // the engine refuses with ErrNotRestored
}

func jobChanges() []jobChange {
	same := func(*jobSchemas) {}
	return []jobChange{
		{name: "state removed", old: same, new: func(s *jobSchemas) { s.noMap = true },
			what: compat.KeyedState, item: "map", verdict: compat.Incompatible, reason: "no longer in the job", notClaims: true},
		{name: "state removed, allowed", old: same, new: func(s *jobSchemas) { s.noMap = true }, allow: true,
			what: compat.KeyedState, item: "map", verdict: compat.Dropped, reason: "not restored"},
		{name: "state added", old: same, new: func(s *jobSchemas) { s.extra = true },
			what: compat.KeyedState, item: "extra", verdict: compat.New},
		{name: "state kind changed", old: same, new: func(s *jobSchemas) { s.mapAsValue = true },
			what: compat.KeyedState, item: "map", verdict: compat.Incompatible, reason: "state kind changed from map to value"},
		{name: "namespace changed", old: same, new: func(s *jobSchemas) { s.listNS = true },
			what: compat.KeyedState, item: "list", verdict: compat.Incompatible, reason: "namespace serializer changed: serializer changed from void to int64"},
		{name: "operator removed", old: same, new: func(s *jobSchemas) { s.uid = "op2" },
			what: compat.Operator, item: "op", verdict: compat.Incompatible, reason: "no longer in the job", notClaims: true},
		{name: "operator removed, allowed", old: same, new: func(s *jobSchemas) { s.uid = "op2" }, allow: true,
			what: compat.Operator, item: "op", verdict: compat.Dropped, reason: "not restored"},
		{name: "max parallelism fixed", old: same, new: func(s *jobSchemas) { s.maxP = 256 },
			what: compat.Operator, item: "op", verdict: compat.Incompatible, reason: "the savepoint has max parallelism 128, the job 256"},
		{name: "max parallelism adopted", old: func(s *jobSchemas) { s.maxP = 256 }, new: same,
			what: compat.Operator, item: "op", verdict: compat.AsIs},
		{name: "parallelism above max parallelism", old: func(s *jobSchemas) { s.maxP = 2 }, new: func(s *jobSchemas) { s.parallelism = 3 },
			what: compat.Operator, item: "op", verdict: compat.Incompatible, reason: "parallelism 3 above the savepoint's max parallelism 2"},
	}
}

// Changes of the job's shape: check's verdict is the engine's, with the
// same reason; what check finds restorable, the engine restores, and the
// savepoint migrate writes for it the engine restores without being allowed
// to drop anything.
func TestJobChangesAgree(t *testing.T) {
	const keys = 8
	for _, c := range jobChanges() {
		t.Run(c.name, func(t *testing.T) {
			old := jobSchemas{key: stringSchema, mapKey: stringSchema, value: baseValue}
			new := old
			c.old(&old)
			c.new(&new)
			in := evolveCase{name: c.name}.input(t, old, keys)
			dir := t.TempDir()
			sp, migrated := filepath.Join(dir, "sp"), filepath.Join(dir, "migrated")
			writeSavepoint(t, old, in, engine.Heap, sp)
			r := openSavepoint(t, sp)
			tg := target(t, buildJob(t, new, in, engine.NewCollectSink[readBack]()))
			opts := evolve.Options{AllowNonRestoredState: c.allow}

			rep, err := evolve.Check(context.Background(), r, tg, opts)
			if err != nil {
				t.Fatal(err)
			}
			var found *evolve.Item
			for i, it := range rep.Items {
				if it.What == c.what && (it.Name == c.item || c.what == compat.Operator && it.Operator == c.item) {
					found = &rep.Items[i]
				}
			}
			if found == nil || found.Verdict != c.verdict || !strings.Contains(found.Reason, c.reason) {
				t.Fatalf("check: %+v; want %v with %q", found, c.verdict, c.reason)
			}
			for _, it := range rep.Items {
				if it.Verdict != compat.AsIs && &it != found && it.Verdict != compat.New && it.Verdict != c.verdict {
					t.Fatalf("check: unexpected %+v", it)
				}
			}

			sink := engine.NewCollectSink[readBack]()
			_, engineErr := engine.Run(context.Background(), buildJob(t, new, in, sink),
				engine.RunOptions{Backend: engine.Heap, RestoreFrom: sp, AllowNonRestoredState: c.allow})
			if !rep.Restorable {
				switch {
				case engineErr == nil:
					t.Fatal("check says incompatible, the engine restores")
				case c.notClaims != errors.Is(engineErr, state.ErrNotRestored):
					t.Fatalf("engine: %v", engineErr)
				case !c.notClaims && !strings.Contains(engineErr.Error(), found.Reason):
					t.Fatalf("engine: %v; check: %s", engineErr, found.Reason)
				}
				if _, err := evolve.Migrate(context.Background(), r, sp, tg, evolve.MigrateOptions{Options: opts}, rewrite.Options{Out: migrated}); !errors.Is(err, compat.ErrIncompatible) {
					t.Fatalf("migrate: %v", err)
				}
				if _, err := os.Stat(migrated); !errors.Is(err, os.ErrNotExist) {
					t.Fatal("migrate wrote a refused savepoint")
				}
				return
			}
			if engineErr != nil {
				t.Fatalf("check says restorable, the engine refuses: %v", engineErr)
			}
			if len(sink.Values()) != keys {
				t.Fatalf("%d keys read back", len(sink.Values()))
			}
			if _, err := evolve.Migrate(context.Background(), r, sp, tg, evolve.MigrateOptions{Options: opts}, rewrite.Options{Out: migrated}); err != nil {
				t.Fatal(err)
			}
			again, err := evolve.Check(context.Background(), openSavepoint(t, migrated), tg, evolve.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range again.Items {
				if it.Verdict != compat.AsIs && it.Verdict != compat.New {
					t.Fatalf("the migrated savepoint: %+v", it)
				}
			}
			if _, err := restoreAndRead(t, new, in, engine.Heap, migrated); err != nil {
				t.Fatalf("restoring the migrated savepoint: %v", err)
			}
		})
	}
}
