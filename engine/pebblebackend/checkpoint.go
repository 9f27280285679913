package pebblebackend

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
)

// Checkpoint is a native checkpoint of a backend's database: Pebble's own
// files in Dir, as DB.Checkpoint left them, with what it takes to read them
// without the job (Keyspace).
//
// The files are not synced: the sstables are hard links to the live
// database's files, which are written without syncs (see noSyncFS), and the
// small files are fresh copies. Whoever keeps a checkpoint syncs the files
// where they finally land.
type Checkpoint struct {
	Dir string
	// DB identifies the database the checkpoint was taken from, unique
	// across processes: an immutable file is the same bytes under the same
	// name in every checkpoint of one DB, and no other DB has a file with
	// the same (DB, name).
	DB       string
	Keyspace Keyspace
	// Files lists every file in Dir, sorted by name.
	Files []CheckpointFile
}

// CheckpointFile is one file of a native checkpoint.
type CheckpointFile struct {
	// Name is Pebble's name for the file, relative to the checkpoint's
	// directory.
	Name string
	Size int64
	// Immutable is set for sstables and blob files, which never change once
	// written; the other files (MANIFEST, OPTIONS, markers) are rewritten or
	// replaced as the database changes.
	Immutable bool
}

// Keyspace says how a database lays out state: which key groups it holds
// and which state or timer service each id in a key's prefix stands for.
// Ids follow declaration order, so a database cannot be read without it.
type Keyspace struct {
	MaxParallelism int            `json:"maxParallelism"`
	KeyGroups      keygroup.Range `json:"keyGroups"`
	States         []StateID      `json:"states"`
}

// StateID maps a state or timer service to the id that prefixes its keys.
type StateID struct {
	Name string `json:"name"`
	ID   uint16 `json:"id"`
	// Kind is the state's kind as savepoint.Kind names it, or TimersKind for
	// a timer service.
	Kind string `json:"kind"`
}

// TimersKind is the Kind of a timer service in a Keyspace.
const TimersKind = "timers"

// newInstanceID names a new database: 64 random bits make a collision
// between the databases of one checkpoint root negligible.
func newInstanceID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("pebblebackend: database id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Checkpoint flushes the memtable (the database has no write-ahead log that
// a checkpoint could carry it in) and makes a native checkpoint in dir, a
// directory that must not exist yet, on the same file system as the
// database so that the sstables are hard links rather than copies.
func (b *Backend) Checkpoint(dir string) (*Checkpoint, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	if err := b.commitWrites(); err != nil {
		return nil, fmt.Errorf("pebblebackend: checkpoint: commit: %w", err)
	}
	if err := b.db.Flush(); err != nil {
		return nil, fmt.Errorf("pebblebackend: checkpoint: flush: %w", err)
	}
	if err := b.db.Checkpoint(dir); err != nil {
		return nil, fmt.Errorf("pebblebackend: checkpoint into %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("pebblebackend: checkpoint: %w", err)
	}
	cp := &Checkpoint{Dir: dir, DB: b.instance, Keyspace: b.keyspace()}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("pebblebackend: checkpoint: %w", err)
		}
		if !info.Mode().IsRegular() {
			return nil, fmt.Errorf("pebblebackend: checkpoint: %s is not a regular file", filepath.Join(dir, e.Name()))
		}
		cp.Files = append(cp.Files, CheckpointFile{Name: e.Name(), Size: info.Size(), Immutable: immutable(e.Name())})
	}
	return cp, nil
}

// immutable tells Pebble's sstables and blob files from its other files by
// their names.
func immutable(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

func (b *Backend) keyspace() Keyspace {
	ks := Keyspace{MaxParallelism: b.maxP, KeyGroups: b.kgs}
	for _, s := range b.states {
		ks.States = append(ks.States, StateID{Name: s.spec.Name, ID: s.id, Kind: s.spec.Kind.String()})
	}
	for _, t := range b.timers {
		ks.States = append(ks.States, StateID{Name: t.name, ID: t.id, Kind: TimersKind})
	}
	slices.SortFunc(ks.States, func(a, b StateID) int { return int(a.ID) - int(b.ID) })
	return ks
}

// stateKind returns the kind of s, zero for a timer service, after checking
// it.
func (s StateID) stateKind() (savepoint.Kind, error) {
	if s.Kind == TimersKind {
		return 0, nil
	}
	return savepoint.ParseKind(s.Kind)
}

// check verifies a keyspace read from a checkpoint's description.
func (ks *Keyspace) check() error {
	if err := keygroup.Validate(1, ks.MaxParallelism); err != nil {
		return err
	}
	if r := ks.KeyGroups; r.Len() == 0 || r.Start < 0 || r.End >= ks.MaxParallelism {
		return fmt.Errorf("key groups %v are not a non-empty range below max parallelism %d", r, ks.MaxParallelism)
	}
	names := map[string]bool{}
	ids := map[uint16]bool{}
	for _, s := range ks.States {
		if names[s.Name] || ids[s.ID] {
			return fmt.Errorf("state %q or id %d appears twice", s.Name, s.ID)
		}
		names[s.Name], ids[s.ID] = true, true
		if _, err := s.stateKind(); err != nil {
			return fmt.Errorf("state %q: %w", s.Name, err)
		}
	}
	return nil
}
