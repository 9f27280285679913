package snapshotfmt

import (
	"bufio"
	"context"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"strings"

	"github.com/stateproc/stateproc/storage"
)

// Target is where a Writer puts a savepoint: storage.OpenTarget and
// storage.Stage give one. Data files are named after their bytes
// (CreateNamed); on a bucket the writer names them itself, having hashed
// every byte it wrote or copied, so that untouched bytes can be copied by
// the store (ComposeNamed, CopyNamed) and nothing has to be renamed.
type Target interface {
	storage.Staging
	CreateNamed(ctx context.Context, stem, ext string) (storage.NamedWriter, error)
	ComposeNamed(ctx context.Context, name string) (storage.Composer, error)
	CopyNamed(ctx context.Context, src storage.File, name string) error
}

// contentSuffixLen is the length of the "-" and 16 hex digits that
// storage.NameByContent puts before a data file's extension.
const contentSuffixLen = 17

// dataFileStem splits the name a data file is created under into the stem
// and extension its content name is built from: "op001-00000.data" gives
// "op001-00000" and ".data", and the file is named
// "op001-00000-<16 hex digits>.data". A name that carries a content suffix
// already (a rewrite keeping its input's names) has it dropped, so that
// suffixes never pile up.
func dataFileStem(name string) (stem, ext string) {
	dir, base := path.Split(name)
	ext = path.Ext(base)
	stem = strings.TrimSuffix(base, ext)
	if stem == "" {
		stem, ext = base, ""
	}
	if i := len(stem) - contentSuffixLen; i > 0 && stem[i] == '-' && isLowerHex(stem[i+1:]) {
		stem = stem[:i]
	}
	return dir + stem, ext
}

// GivenName returns the name a data file was created under: its name
// without the content suffix (see CreateDataFile), or the name itself if
// it carries none.
func GivenName(name string) string {
	stem, ext := dataFileStem(name)
	return stem + ext
}

func isLowerHex(s string) bool {
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// sink takes the bytes of one data file as the writer produces them.
type sink interface {
	// write appends bytes the writer encoded.
	write(p []byte) error
	// copied appends bytes the writer read at off in src and verified; a
	// sink may have the store copy them instead of sending them.
	copied(p []byte, src storage.File, off int64, v Version) error
	// finish completes the file and returns its name.
	finish(ctx context.Context) (string, error)
	// abort drops the file.
	abort()
}

// serverCopyMin is the shortest run of bytes copied unchanged from one
// file of the target's store that the store copies instead of this
// process: above S3's 5 MiB part minimum, and long enough that the bytes
// read again to top up a part before it (at most 5 MiB) are a small share.
const serverCopyMin = 16 << 20

// composeSink builds a data file in a bucket. Every byte is hashed as it
// comes; the bytes the writer encodes, and copied runs shorter than
// serverCopyMin, go to a spool file on local disk, and longer runs are
// only noted. At finish the name is known, and the file is uploaded under
// it directly: the spool's bytes sent, the runs copied by the store, and a
// file that is one whole source file, preamble and all, is one copy
// request. Memory holds a bufio buffer; the disk holds the spooled bytes.
type composeSink struct {
	t         Target
	stem, ext string
	h         hash.Hash
	spool     *os.File
	buf       *bufio.Writer
	spoolLen  int64
	// pieces is the file in order: spans of the spool and runs to copy.
	pieces []piece
	// cut is where the spool's next span starts.
	cut int64
	run *piece
	// written counts the bytes of write; runs counts the runs started and
	// first is the first: a file of a preamble and one run that is a whole
	// source file is a copy of it, short or long.
	written int64
	runs    int
	first   piece
	// claim is a copy of claimSrc to the name it claims, started before
	// its bytes came (see claimWhole); finish keeps it if the file is
	// claimSrc whole under that name, and discards it otherwise.
	claim    *storage.ClaimedCopy
	claimSrc storage.File
	// unread is the source file this file is, whole, under unreadName,
	// taken on trust without its bytes (DataFileWriter.CopyUnread).
	unread     storage.File
	unreadName string
}

// piece is a span of the spool (src nil) or a run of a source file.
type piece struct {
	src     storage.File
	version Version
	off, n  int64
	// spooled says a run's bytes are in the spool from spoolAt on, as long
	// as the run is shorter than serverCopyMin.
	spooled bool
	spoolAt int64
}

func newComposeSink(t Target, stem, ext string) (*composeSink, error) {
	f, err := os.CreateTemp("", storage.TempPrefix+"spool-")
	if err != nil {
		return nil, fmt.Errorf("a spool file for %s: %w", stem+ext, err)
	}
	// Unlinked at once where the system allows it (Unix): the spool is then
	// the open file's alone, its space freed when it is closed or the
	// process dies, so that a killed run leaves none behind. Where an open
	// file cannot be removed, abort removes it.
	os.Remove(f.Name())
	return &composeSink{t: t, stem: stem, ext: ext, h: storage.NewContentHash(), spool: f, buf: bufio.NewWriterSize(f, 64<<10)}, nil
}

func (s *composeSink) spoolWrite(p []byte) error {
	n, err := s.buf.Write(p)
	s.spoolLen += int64(n)
	return err
}

func (s *composeSink) write(p []byte) error {
	s.h.Write(p)
	s.written += int64(len(p))
	if err := s.endRun(); err != nil {
		return err
	}
	return s.spoolWrite(p)
}

func (s *composeSink) copied(p []byte, src storage.File, off int64, v Version) error {
	s.h.Write(p)
	if !storage.SameStore(s.t, src) {
		s.written += int64(len(p))
		if err := s.endRun(); err != nil {
			return err
		}
		return s.spoolWrite(p)
	}
	if r := s.run; r == nil || r.src != src || r.off+r.n != off {
		if err := s.endRun(); err != nil {
			return err
		}
		s.run = &piece{src: src, version: v, off: off, spooled: true, spoolAt: s.spoolLen}
		if s.runs == 0 && s.written == preambleLen && off == preambleLen && v == NewestVersion {
			// The preamble written is the source's, which the reader
			// checked: the run starts at the source's first byte, and no
			// bytes before it need a part of their own.
			s.run.off, s.run.n, s.run.spoolAt = 0, preambleLen, 0
		}
		s.runs++
	}
	r := s.run
	r.n += int64(len(p))
	if s.runs == 1 {
		s.first = *r
	}
	if !r.spooled {
		return nil
	}
	if r.n < serverCopyMin {
		return s.spoolWrite(p)
	}
	// Long enough for the store to copy: its bytes leave the spool.
	r.spooled = false
	if err := s.buf.Flush(); err != nil {
		return err
	}
	if err := s.spool.Truncate(r.spoolAt); err != nil {
		return err
	}
	if _, err := s.spool.Seek(r.spoolAt, io.SeekStart); err != nil {
		return err
	}
	s.spoolLen = r.spoolAt
	return nil
}

// endRun closes the current run: a short one is part of the spool's span,
// a long one a piece of its own.
func (s *composeSink) endRun() error {
	r := s.run
	if r == nil {
		return nil
	}
	s.run = nil
	if r.spooled {
		return nil
	}
	if s.spoolLen > s.cut {
		s.pieces = append(s.pieces, piece{off: s.cut, n: s.spoolLen - s.cut})
	}
	s.pieces = append(s.pieces, *r)
	s.cut = s.spoolLen
	return nil
}

func (s *composeSink) finish(ctx context.Context) (string, error) {
	defer s.abort()
	if s.unread != nil {
		return s.unreadName, s.t.CopyNamed(ctx, s.unread, s.unreadName)
	}
	if err := s.endRun(); err != nil {
		return "", err
	}
	if err := s.buf.Flush(); err != nil {
		return "", err
	}
	if s.spoolLen > s.cut {
		s.pieces = append(s.pieces, piece{off: s.cut, n: s.spoolLen - s.cut})
	}
	name := storage.NameByContent(s.stem, s.h.Sum(nil), s.ext)
	src, whole := s.wholeFile()
	if c := s.claim; c != nil {
		s.claim = nil
		switch err := c.Wait(); {
		case whole && src == s.claimSrc && name == c.Name() && err == nil:
			c.Keep()
			return name, nil
		case ctx.Err() != nil:
			// The target's Abort removes the copy.
			return "", ctx.Err()
		}
		// A false claim, a file that is not the source after all, or a copy
		// that failed (a file of that name existed): the copy goes, and the
		// file is written as without it.
		if err := c.Discard(ctx); err != nil {
			return "", err
		}
	}
	if whole {
		return name, s.t.CopyNamed(ctx, src, name)
	}
	k, err := s.t.ComposeNamed(ctx, name)
	if err != nil {
		return "", err
	}
	for _, p := range s.pieces {
		if p.src == nil {
			_, err = io.Copy(k, io.NewSectionReader(s.spool, p.off, p.n))
		} else {
			err = k.CopyRange(ctx, p.src, p.off, p.n)
		}
		if err != nil {
			k.Close()
			return "", err
		}
	}
	return name, k.Close()
}

// wholeFile reports whether the file is a source file whole: one run, from
// the preamble on, and nothing else.
func (s *composeSink) wholeFile() (storage.File, bool) {
	r := s.first
	return r.src, s.runs == 1 && s.written == preambleLen && r.off == 0 && r.n == r.src.Size()
}

// claimWhole starts the copy of src, whose name claims the digest of its
// bytes, to that name: a sink that will turn out to be src whole needs no
// other copy, and the store makes this one while the writer reads src to
// check it. It reports whether the copy started.
func (s *composeSink) claimWhole(ctx context.Context, src storage.File, name string) bool {
	if s.claim != nil || s.runs > 0 || s.written != preambleLen {
		return false
	}
	s.claim = storage.StartClaimedCopy(ctx, s.t, src, name)
	s.claimSrc = src
	return s.claim != nil
}

func (s *composeSink) abort() {
	// A claimed copy left unsettled is the target's to remove: a file that
	// fails fails the savepoint, which is aborted.
	s.claim = nil
	if s.spool != nil {
		s.spool.Close()
		os.Remove(s.spool.Name())
		s.spool = nil
	}
}
