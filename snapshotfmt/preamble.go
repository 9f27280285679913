package snapshotfmt

import (
	"encoding/binary"

	"github.com/stateproc/stateproc/savepoint"
)

// Version is a version of the layout, as the preamble of every file
// records it.
type Version uint32

// Format versions: an append-only list. A reader reads every version from
// MinSupportedVersion to NewestVersion; a writer writes NewestVersion only.
// When a version is added, savepoints of the previous one are frozen under
// testdata/savepoints/v<N>/ and read by the tests forever.
const (
	// Version1 is the first version of the layout.
	Version1 Version = 1
	// Version2 adds the watermark to the metadata, and to the index entry
	// of a keyed state its value-size histogram and, with TTL, its
	// last-modified histogram.
	Version2 Version = 2

	NewestVersion       = Version2
	MinSupportedVersion = Version1
)

// MetadataName is the name of the metadata file in a savepoint directory.
const MetadataName = savepoint.MetadataFile

// The preamble is the one part of the layout that never changes, so that a
// foreign file and a file from a newer version each get their own error
// before anything else is interpreted.
const (
	magic       = "STPROC"
	preambleLen = 12

	typeMetadata byte = 'M'
	typeData     byte = 'D'
)

func appendPreamble(dst []byte, fileType byte) []byte {
	dst = append(dst, magic...)
	dst = append(dst, fileType, 0)
	return binary.BigEndian.AppendUint32(dst, uint32(NewestVersion))
}

// checkMetadataPreamble checks the first bytes of a metadata file (all of
// them if it is shorter than a preamble) and returns the format version.
func checkMetadataPreamble(b []byte) (Version, error) {
	n := min(len(b), len(magic))
	if string(b[:n]) != magic[:n] {
		return 0, at(MetadataName, -1, 0, notSavepointf("not a stateproc file: magic %q, want %q", b[:n], magic))
	}
	if len(b) < preambleLen {
		return 0, at(MetadataName, -1, int64(len(b)), corruptf("truncated: the file is %d bytes, shorter than the %d-byte preamble", len(b), preambleLen))
	}
	if b[6] != typeMetadata {
		return 0, at(MetadataName, -1, 6, notSavepointf("not a metadata file: file type %q", b[6]))
	}
	if b[7] != 0 {
		return 0, at(MetadataName, -1, 7, notSavepointf("not a metadata file: reserved byte is %#02x", b[7]))
	}
	v := Version(binary.BigEndian.Uint32(b[8:]))
	if v > NewestVersion {
		return 0, at(MetadataName, -1, 8, unsupportedf(ErrNewerVersion,
			"written by a newer stateproc (format version %d, this reader reads up to %d)", v, NewestVersion))
	}
	if v < MinSupportedVersion {
		return 0, at(MetadataName, -1, 8, unsupportedf(ErrUnsupportedVersion,
			"format version %d is no longer supported (this reader reads versions %d to %d)", v, MinSupportedVersion, NewestVersion))
	}
	return v, nil
}

// checkDataPreamble checks a data file's preamble. A data file belongs to
// the metadata that names it, so any mismatch, its version included, is
// corruption of the savepoint rather than a foreign file.
func checkDataPreamble(name string, b []byte, version Version) error {
	switch {
	case string(b[:len(magic)]) != magic:
		return at(name, -1, 0, corruptf("not a stateproc data file: magic %q, want %q", b[:len(magic)], magic))
	case b[6] != typeData:
		return at(name, -1, 6, corruptf("not a data file: file type %q", b[6]))
	case b[7] != 0:
		return at(name, -1, 7, corruptf("not a data file: reserved byte is %#02x", b[7]))
	}
	if v := Version(binary.BigEndian.Uint32(b[8:])); v != version {
		return at(name, -1, 8, corruptf("data file has format version %d, its metadata %d", v, version))
	}
	return nil
}
