package snapshotfmt

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/savepoint"
)

// The numbers are written into savepoints: they never change, and a new
// version is appended.
func TestVersionsArePinned(t *testing.T) {
	if Version1 != 1 {
		t.Errorf("Version1 = %d", Version1)
	}
	if NewestVersion != 1 {
		t.Errorf("NewestVersion = %d", NewestVersion)
	}
	if MinSupportedVersion != 1 {
		t.Errorf("MinSupportedVersion = %d", MinSupportedVersion)
	}
	if MetadataName != "_metadata" {
		t.Errorf("MetadataName = %q", MetadataName)
	}
}

func smallSavepoint(t testing.TB) *memDir {
	d := newMemDir()
	writeSavepoint(t, d, testMeta(), testData(10), Options{})
	return d
}

func TestPreambleErrors(t *testing.T) {
	base := smallSavepoint(t)
	for _, tc := range []struct {
		name   string
		file   string // the file to damage
		change func(b []byte)
		want   error
		msg    string
	}{
		{"wrong magic", MetadataName, func(b []byte) { copy(b, "PK\x03\x04") }, ErrNotSavepoint, "not a stateproc file"},
		{"data file as metadata", MetadataName, func(b []byte) { b[6] = 'D' }, ErrNotSavepoint, "not a metadata file"},
		{"reserved byte", MetadataName, func(b []byte) { b[7] = 1 }, ErrNotSavepoint, "reserved byte"},
		{"newer version", MetadataName, func(b []byte) { binary.BigEndian.PutUint32(b[8:], uint32(NewestVersion+1)) }, ErrNewerVersion, "newer stateproc (format version 2, this reader reads up to 1)"},
		{"older version", MetadataName, func(b []byte) { binary.BigEndian.PutUint32(b[8:], uint32(MinSupportedVersion-1)) }, ErrUnsupportedVersion, "format version 0 is no longer supported"},
		{"data magic", "data-001", func(b []byte) { b[0] = 'X' }, ErrCorrupt, "not a stateproc data file"},
		{"metadata as data", "data-001", func(b []byte) { b[6] = 'M' }, ErrCorrupt, "not a data file"},
		{"data reserved", "data-001", func(b []byte) { b[7] = 0x80 }, ErrCorrupt, "reserved byte"},
		{"data version", "data-001", func(b []byte) { b[11] = 2 }, ErrCorrupt, "data file has format version 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := base.clone()
			tc.change(d.files[tc.file])
			_, err := Open(context.Background(), d)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
			// The read seam's sentinel follows from the layout's.
			seam := map[error]error{ErrNotSavepoint: savepoint.ErrNotSavepoint, ErrCorrupt: savepoint.ErrCorrupt,
				ErrNewerVersion: savepoint.ErrUnsupported, ErrUnsupportedVersion: savepoint.ErrUnsupported}[tc.want]
			if !errors.Is(err, seam) {
				t.Fatalf("Open = %v, want it to wrap %v too", err, seam)
			}
			var e *savepoint.Error
			if !errors.As(err, &e) || e.File != tc.file || e.Offset < 0 {
				t.Fatalf("error %v does not locate the file %s and an offset", err, tc.file)
			}
			if !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "snapshotfmt: "+tc.file+": ") {
				t.Fatalf("error %q, want it to name %s and say %q", err, tc.file, tc.msg)
			}
		})
	}
}

func TestOpenWithoutMetadata(t *testing.T) {
	d := smallSavepoint(t)
	delete(d.files, MetadataName)
	if _, err := Open(context.Background(), d); !errors.Is(err, ErrNotSavepoint) {
		t.Fatalf("Open without _metadata = %v", err)
	}
	d = smallSavepoint(t)
	delete(d.files, "data-000")
	if _, err := Open(context.Background(), d); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "data-000") {
		t.Fatalf("Open with a data file missing = %v", err)
	}
}
