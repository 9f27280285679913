package snapshotfmt

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
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
	if Version2 != 2 {
		t.Errorf("Version2 = %d", Version2)
	}
	if NewestVersion != 2 {
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
		{"newer version", MetadataName, func(b []byte) { binary.BigEndian.PutUint32(b[8:], uint32(NewestVersion+1)) }, ErrNewerVersion, "newer stateproc (format version 3, this reader reads up to 2)"},
		{"older version", MetadataName, func(b []byte) { binary.BigEndian.PutUint32(b[8:], uint32(MinSupportedVersion-1)) }, ErrUnsupportedVersion, "format version 0 is no longer supported"},
		{"data magic", "data-001", func(b []byte) { b[0] = 'X' }, ErrCorrupt, "not a stateproc data file"},
		{"metadata as data", "data-001", func(b []byte) { b[6] = 'M' }, ErrCorrupt, "not a data file"},
		{"data reserved", "data-001", func(b []byte) { b[7] = 0x80 }, ErrCorrupt, "reserved byte"},
		{"data version", "data-001", func(b []byte) { b[11] = 1 }, ErrCorrupt, "data file has format version 1, its metadata 2"},
	} {
		if tc.file != MetadataName {
			tc.file = base.named(t, tc.file)
		}
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
	name := d.named(t, "data-000")
	delete(d.files, name)
	if _, err := Open(context.Background(), d); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), name) {
		t.Fatalf("Open with a data file missing = %v", err)
	}
}

// OpenLazily reads _metadata alone; a data file is opened, and checked,
// when a segment of it is first read.
func TestOpenLazily(t *testing.T) {
	ctx := context.Background()
	d := smallSavepoint(t)
	name := d.named(t, "data-001")
	d.files[name] = append(d.files[name], 'x')
	od := &openingDir{memDir: d}
	r, err := OpenLazily(ctx, od)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !slices.Equal(od.opened, []string{MetadataName}) {
		t.Fatalf("OpenLazily opened %v, want only %s", od.opened, MetadataName)
	}
	var bad, good int
	for _, seg := range opSegments(r, 0) {
		it := r.iterate(ctx, seg)
		for it.Next() {
		}
		if err := it.Err(); err != nil {
			if seg.File != name || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "trailing bytes") {
				t.Fatalf("segment of %s: %v", seg.File, err)
			}
			bad++
		} else {
			good++
		}
		it.Close()
	}
	if bad == 0 || good == 0 {
		t.Fatalf("%d segments failed and %d read: want some of each", bad, good)
	}
	if _, err := Open(ctx, d); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of the same savepoint = %v, want ErrCorrupt", err)
	}
}
