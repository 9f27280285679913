package flinkfmt

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/storage"
)

// A stream at the threshold stays in the metadata; one byte more makes it
// a file of its own, with the bytes written before the threshold was
// crossed at its start.
func TestStreamWriterInlineOrFile(t *testing.T) {
	ctx := context.Background()
	target := filepath.Join(t.TempDir(), "sp")
	st, err := storage.Stage(target, false)
	if err != nil {
		t.Fatal(err)
	}
	small := NewStreamWriter(ctx, st, "small", 8)
	small.Write([]byte("1234"))
	small.Write([]byte("5678"))
	h, err := small.Finish()
	if err != nil || h.Kind != StreamInline || string(h.Data) != "12345678" || h.Name != "small" || h.Size != 8 {
		t.Fatalf("%+v, %v", h, err)
	}
	big := NewStreamWriter(ctx, st, "big", 8)
	big.Write([]byte("1234"))
	big.Write([]byte("56789"))
	if big.Pos() != 9 {
		t.Errorf("position %d", big.Pos())
	}
	h, err = big.Finish()
	if err != nil || h.Kind != StreamRelativeFile || h.Name != "big" || h.Size != 9 {
		t.Fatalf("%+v, %v", h, err)
	}
	if err := st.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(target, "big"))
	if err != nil || !bytes.Equal(b, []byte("123456789")) {
		t.Errorf("%q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(target, "small")); !os.IsNotExist(err) {
		t.Errorf("the inline stream has a file: %v", err)
	}
}
