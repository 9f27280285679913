package snapshotfmt

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// recordingWriter keeps what it is given, and fails every write once it
// holds failAfter bytes or more (when failAfter > 0).
type recordingWriter struct {
	got       bytes.Buffer
	writes    int
	failAfter int
	closed    bool
}

var errDeviceFull = errors.New("device full")

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.failAfter > 0 && w.got.Len() >= w.failAfter {
		return 0, errDeviceFull
	}
	return w.got.Write(p)
}

func (w *recordingWriter) Close() error { w.closed = true; return nil }

func (w *recordingWriter) Name() string { return "op001-00000-0123456789abcdef.data" }

// TestBehindSinkWritesEveryByteInOrder feeds pieces of every size from 1
// byte to several buffers and checks that the writer gets the same bytes
// in the same order, in whole buffers but the last.
func TestBehindSinkWritesEveryByteInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	want := make([]byte, 7*behindBuf+12345)
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	w := &recordingWriter{}
	s := newBehindSink(w)
	for rest := want; len(rest) > 0; {
		n := min(len(rest), 1+rng.IntN(2*behindBuf))
		if rng.IntN(4) == 0 {
			n = min(len(rest), 1+rng.IntN(100))
		}
		if err := s.write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	name, err := s.finish(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if name != w.Name() || !w.closed {
		t.Errorf("finish gave %q, closed %v", name, w.closed)
	}
	if !bytes.Equal(w.got.Bytes(), want) {
		t.Fatalf("the writer got %d bytes, not the %d written, or not in order", w.got.Len(), len(want))
	}
	if wantWrites := (len(want) + behindBuf - 1) / behindBuf; w.writes != wantWrites {
		t.Errorf("%d writes, want %d", w.writes, wantWrites)
	}
}

// TestBehindSinkReportsAFailedWrite checks that a write that fails behind
// the encoder surfaces at a later write or at the latest at finish, and
// that the file is then not named.
func TestBehindSinkReportsAFailedWrite(t *testing.T) {
	w := &recordingWriter{failAfter: 2 * behindBuf}
	s := newBehindSink(w)
	chunk := bytes.Repeat([]byte{7}, 100<<10)
	var writeErr error
	for range 40 {
		if writeErr = s.write(chunk); writeErr != nil {
			break
		}
	}
	name, err := s.finish(t.Context())
	if !errors.Is(err, errDeviceFull) {
		t.Fatalf("finish: %v, want %v", err, errDeviceFull)
	}
	if writeErr != nil && !errors.Is(writeErr, errDeviceFull) {
		t.Errorf("write: %v, want %v", writeErr, errDeviceFull)
	}
	if name != "" {
		t.Errorf("a failed file is named %q", name)
	}
	if w.got.Len() != 2*behindBuf {
		t.Errorf("the writer holds %d bytes, want the %d before the failure", w.got.Len(), 2*behindBuf)
	}
}

// TestBehindSinkAbortEndsTheWriter checks that abort waits for the writing
// goroutine and closes the writer, and that a second abort is harmless.
func TestBehindSinkAbortEndsTheWriter(t *testing.T) {
	w := &recordingWriter{}
	s := newBehindSink(w)
	if err := s.write(bytes.Repeat([]byte{1}, behindBuf+10)); err != nil {
		t.Fatal(err)
	}
	s.abort()
	s.abort()
	if !w.closed {
		t.Error("abort left the writer open")
	}
	if w.got.Len() != behindBuf+10 {
		t.Errorf("the writer got %d bytes before the abort, want %d", w.got.Len(), behindBuf+10)
	}
}

// A small file takes one small buffer, not the full set.
func TestBehindSinkSmallFileTakesLittle(t *testing.T) {
	w := &recordingWriter{}
	s := newBehindSink(w)
	if err := s.write(make([]byte, 10<<10)); err != nil {
		t.Fatal(err)
	}
	if s.made != 1 || cap(s.cur) != behindFirst {
		t.Errorf("%d buffers, the current of %d bytes, want 1 of %d", s.made, cap(s.cur), behindFirst)
	}
	if _, err := s.finish(t.Context()); err != nil || w.got.Len() != 10<<10 {
		t.Errorf("finish: %v, %d bytes written", err, w.got.Len())
	}
}
