package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/stateproc/stateproc/engine/pebblebackend"
	"github.com/stateproc/stateproc/storage"
)

// An incremental checkpoint keeps the keyed state of Pebble subtasks as
// their databases' own files: the immutable ones under the root's shared/,
// where later checkpoints find them, the others in the checkpoint's
// directory. incrementalName, in the checkpoint's directory, lists them;
// everything else is in the canonical _metadata and data files beside it.
// See the package documentation for the whole layout.
const (
	incrementalName    = "_incremental.json"
	incrementalVersion = 1
	sharedDir          = "shared"
)

// ErrCorruptCheckpoint is wrapped by errors about a checkpoint whose files
// are missing, damaged or inconsistent.
var ErrCorruptCheckpoint = errors.New("engine: corrupt checkpoint")

// incrementalManifest is the content of incrementalName.
type incrementalManifest struct {
	Version   int        `json:"version"`
	Databases []nativeDB `json:"databases"`
}

// nativeDB is the native checkpoint of one keyed Pebble subtask.
type nativeDB struct {
	// Operator is the operator's uid.
	Operator string `json:"operator"`
	Subtask  int    `json:"subtask"`
	// DB identifies the database the files come from.
	DB       string                 `json:"db"`
	Keyspace pebblebackend.Keyspace `json:"keyspace"`
	Files    []nativeFile           `json:"files"`
}

// nativeFile is one file of a native checkpoint.
type nativeFile struct {
	// Name is the database's name for the file.
	Name string `json:"name"`
	// Path is where the file lies, relative to the checkpoint root: under
	// shared/ for immutable files, under the checkpoint's directory for the
	// others.
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
}

// sharedName is the name in shared/ of an immutable file of a database:
// stable, so that every checkpoint of the database finds the file under one
// name, and unique, because no two databases share an id.
func sharedName(uid string, subtask int, db, file string) string {
	return path.Join(sharedDir, fmt.Sprintf("%s-%d-%s-%s", sanitize(uid), subtask, db, file))
}

// nativeDirName is the directory, within a checkpoint's directory, of the
// small files of operator op's subtask: fixed by position, as data files
// are.
func nativeDirName(op, subtask int) string {
	return fmt.Sprintf("op%03d-%05d", op, subtask)
}

func encodeManifest(m *incrementalManifest) ([]byte, error) {
	return json.MarshalIndent(m, "", "  ")
}

// readManifest reads the incremental manifest of the checkpoint in dir; ok
// is false when the checkpoint has none, as a heap job's checkpoints and
// every savepoint.
func readManifest(dir string) (m *incrementalManifest, ok bool, err error) {
	p := filepath.Join(dir, incrementalName)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	m = &incrementalManifest{}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		return nil, false, fmt.Errorf("%w: %s: %v", ErrCorruptCheckpoint, p, err)
	}
	if err := m.check(); err != nil {
		return nil, false, fmt.Errorf("%w: %s: %v", ErrCorruptCheckpoint, p, err)
	}
	return m, true, nil
}

// check rejects a manifest this version cannot read and names that could
// point outside the checkpoint root or the database's directory.
func (m *incrementalManifest) check() error {
	if m.Version != incrementalVersion {
		return fmt.Errorf("version %d, this engine reads version %d", m.Version, incrementalVersion)
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
