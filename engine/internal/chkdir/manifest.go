package chkdir

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"

	"github.com/stateproc/stateproc/engine/pebblebackend"
	"github.com/stateproc/stateproc/storage"
)

// An incremental checkpoint keeps the keyed state of Pebble subtasks as
// their databases' own files: the immutable ones under the root's shared/,
// where later checkpoints find them, the others in the checkpoint's
// directory. ManifestName, in the checkpoint's directory, lists them;
// everything else is in the canonical _metadata and data files beside it.
// The engine's package documentation describes the whole layout.
const (
	ManifestName = "_incremental.json"
	Version      = 1
	SharedDir    = "shared"
)

// ErrCorrupt is wrapped by errors about a checkpoint whose files
// are missing, damaged or inconsistent.
var ErrCorrupt = errors.New("engine: corrupt checkpoint")

// Manifest is the content of ManifestName.
type Manifest struct {
	Version   int  `json:"version"`
	Databases []DB `json:"databases"`
}

// DB is the native checkpoint of one keyed Pebble subtask.
type DB struct {
	// Operator is the operator's uid.
	Operator string `json:"operator"`
	Subtask  int    `json:"subtask"`
	// DB identifies the database the files come from.
	DB       string                 `json:"db"`
	Keyspace pebblebackend.Keyspace `json:"keyspace"`
	Files    []File                 `json:"files"`
}

// File is one file of a native checkpoint.
type File struct {
	// Name is the database's name for the file.
	Name string `json:"name"`
	// Path is where the file lies, relative to the checkpoint root: under
	// shared/ for immutable files, under the checkpoint's directory for the
	// others.
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
}

// SharedName is the name in shared/ of an immutable file of a database:
// stable, so that every checkpoint of the database finds the file under one
// name, and unique, because no two databases share an id.
func SharedName(uid string, subtask int, db, file string) string {
	return path.Join(SharedDir, fmt.Sprintf("%s-%d-%s-%s", Sanitize(uid), subtask, db, file))
}

// NativeDirName is the directory, within a checkpoint's directory, of the
// small files of operator op's subtask: fixed by position, as data files
// are.
func NativeDirName(op, subtask int) string {
	return fmt.Sprintf("op%03d-%05d", op, subtask)
}

// Encode is the content of ManifestName for m.
func Encode(m *Manifest) ([]byte, error) {
	return json.MarshalIndent(m, "", "  ")
}

// ReadManifest reads the incremental manifest of the checkpoint in the
// local directory dir; ok is false when the checkpoint has none, as a heap
// job's checkpoints and every savepoint.
func ReadManifest(dir string) (m *Manifest, ok bool, err error) {
	d := storage.LocalDir(dir)
	defer d.Close()
	return ReadManifestIn(context.Background(), d)
}

// maxManifest bounds the size of a manifest that is read: a few hundred
// bytes per database file, so far more than any checkpoint needs.
const maxManifest = 64 << 20

// ReadManifestIn reads the incremental manifest of the checkpoint that d,
// a local directory or a bucket prefix, holds.
func ReadManifestIn(ctx context.Context, d storage.Dir) (m *Manifest, ok bool, err error) {
	return readManifest(ctx, d, ManifestName, d.Location()+"/"+ManifestName)
}

func readManifest(ctx context.Context, d storage.Dir, name, where string) (m *Manifest, ok bool, err error) {
	f, err := d.Open(ctx, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if f.Size() > maxManifest {
		return nil, false, fmt.Errorf("%w: %s: %d bytes, more than the %d a manifest may have", ErrCorrupt, where, f.Size(), maxManifest)
	}
	b := make([]byte, f.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF) && len(b) == 0) {
		return nil, false, fmt.Errorf("reading %s: %w", where, err)
	}
	m = &Manifest{}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		return nil, false, fmt.Errorf("%w: %s: %v", ErrCorrupt, where, err)
	}
	if err := m.check(); err != nil {
		return nil, false, fmt.Errorf("%w: %s: %v", ErrCorrupt, where, err)
	}
	return m, true, nil
}

// check rejects a manifest this version cannot read and names that could
// point outside the checkpoint root or the database's directory.
func (m *Manifest) check() error {
	if m.Version != Version {
		return fmt.Errorf("version %d, this engine reads version %d", m.Version, Version)
	}
	for _, db := range m.Databases {
		for _, f := range db.Files {
			if err := storage.CheckName(f.Path); err != nil {
				return err
			}
			if err := storage.CheckName(f.Name); err != nil || path.Base(f.Name) != f.Name {
				return fmt.Errorf("%w: database file %q", storage.ErrBadName, f.Name)
			}
			if f.Size < 0 {
				return fmt.Errorf("file %s of %d bytes", f.Path, f.Size)
			}
		}
	}
	return nil
}
