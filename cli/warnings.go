package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/stateproc/stateproc/inspect"
)

// warningText says where opaque bytes lie and why.
func warningText(w inspect.WarningInfo) string {
	parts := []string{w.File}
	if w.KeyGroup != nil {
		parts = append(parts, "key group "+strconv.Itoa(*w.KeyGroup))
	}
	at := "offset"
	if w.Compressed {
		at = "decompressed offset"
	}
	parts = append(parts, fmt.Sprintf("%d bytes at %s %d", w.Length, at, w.Offset), fmt.Sprintf("operator %s state %s", w.Operator, w.State))
	if w.Class != "" {
		parts = append(parts, "class "+w.Class)
	}
	return strings.Join(append(parts, w.Message), ": ")
}

// printWarnings tells on stderr of the bytes a command could not walk:
// they are no error, so it still exits 0.
func printWarnings(stderr io.Writer, ws []inspect.WarningInfo) {
	if stderr == nil {
		return
	}
	for _, w := range ws {
		fmt.Fprintf(stderr, "stateproc: warning: left as opaque bytes, the rest of the key group not read: %s\n", warningText(w))
	}
}
