package snapshotfmt

import (
	"context"
	"errors"
	"sync"

	"github.com/stateproc/stateproc/storage"
)

// behindBuf is the size of a full buffer of a behindSink, and behindBufs
// how many it has at most: one filling while the others are written. A
// file's first buffer starts at behindFirst and grows, so that a small
// file takes little memory.
const (
	behindBuf   = 512 << 10
	behindBufs  = 3
	behindFirst = 64 << 10
)

// behindSink streams a local data file into a CreateNamed writer, which
// names it after its bytes, with the writes made by a goroutine of its
// own: the local writer hashes every byte for the file's content name,
// copies it into the page cache and starts its write-back. Handed to
// another core, that work runs while the next buffer is encoded, and a
// write that blocks on the device stalls only the writing goroutine.
type behindSink struct {
	out  storage.NamedWriter
	cur  []byte
	full chan []byte
	free chan []byte
	done chan struct{}
	// err is the first error of a write, set by the writing goroutine.
	mu  sync.Mutex
	err error
	// made counts the buffers allocated; ended is set once full is closed.
	made  int
	ended bool
}

func newBehindSink(out storage.NamedWriter) *behindSink {
	s := &behindSink{out: out, full: make(chan []byte, behindBufs), free: make(chan []byte, behindBufs), done: make(chan struct{})}
	s.cur, s.made = make([]byte, 0, behindFirst), 1
	go s.run()
	return s
}

func (s *behindSink) run() {
	defer close(s.done)
	for b := range s.full {
		if s.failed() == nil {
			if _, err := s.out.Write(b); err != nil {
				s.mu.Lock()
				s.err = err
				s.mu.Unlock()
			}
		}
		s.free <- b[:0]
	}
}

func (s *behindSink) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *behindSink) write(p []byte) error {
	for len(p) > 0 {
		if len(s.cur) == cap(s.cur) && cap(s.cur) < behindBuf {
			s.cur = append(make([]byte, 0, min(2*cap(s.cur), behindBuf)), s.cur...)
		}
		n := copy(s.cur[len(s.cur):cap(s.cur)], p)
		s.cur, p = s.cur[:len(s.cur)+n], p[n:]
		if len(s.cur) >= behindBuf {
			s.full <- s.cur
			s.cur = s.take()
		}
	}
	return s.failed()
}

// take returns a free buffer, allocating one while fewer than behindBufs
// exist.
func (s *behindSink) take() []byte {
	select {
	case b := <-s.free:
		return b
	default:
	}
	if s.made < behindBufs {
		s.made++
		return make([]byte, 0, behindBuf)
	}
	return <-s.free
}

func (s *behindSink) copied(p []byte, _ storage.File, _ int64, _ Version) error { return s.write(p) }

// end hands over what is buffered and waits for the writing goroutine.
func (s *behindSink) end() error {
	if !s.ended {
		s.ended = true
		if len(s.cur) > 0 {
			s.full <- s.cur
			s.cur = nil
		}
		close(s.full)
	}
	<-s.done
	return s.failed()
}

func (s *behindSink) finish(context.Context) (string, error) {
	writeErr := s.end()
	closeErr := s.out.Close()
	if err := errors.Join(writeErr, closeErr); err != nil {
		return "", err
	}
	return s.out.Name(), nil
}

// abort closes the writer: what it completes lies in the staging area,
// which the Writer's Abort removes.
func (s *behindSink) abort() {
	s.end()
	s.out.Close()
}
