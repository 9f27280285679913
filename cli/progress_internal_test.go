package cli

import (
	"context"
	"testing"

	"github.com/stateproc/stateproc/storage"
)

// The bar's description gives what went to and from a bucket, and nothing
// for local work.
func TestTransferredDescription(t *testing.T) {
	c := new(storage.Counters)
	if d := transferred("pruning", c); d != "" {
		t.Errorf("nothing moved: %q, want no description", d)
	}
	if d := transferred("pruning", nil); d != "" {
		t.Errorf("no counters: %q, want no description", d)
	}
	c.BytesRead.Add(3 << 20)
	if d, want := transferred("scanning", c), "scanning (3.1 MB read)"; d != want {
		t.Errorf("reads alone: %q, want %q", d, want)
	}
	c.BytesWritten.Add(2000)
	c.BytesCopied.Add(5 << 30)
	if d, want := transferred("pruning", c), "pruning (3.1 MB read, 2.0 kB sent, 5.4 GB copied by the store)"; d != want {
		t.Errorf("a rewrite: %q, want %q", d, want)
	}
	ctx := withTransfers(context.Background(), c)
	if transfersOf(ctx) != c || transfersOf(context.Background()) != nil {
		t.Error("the context does not carry the command's counters")
	}
}
