package savepoint

import (
	"fmt"
	"strconv"
	"strings"
)

// Warning is a part of a savepoint that a reader skipped without it being
// wrong: bytes whose end only the job's classes know (Apache Flink's heap
// layout writes values back to back, and a Kryo value has no length of its
// own), after which the rest of a key group cannot be walked. The bytes are
// listed as opaque, and reading goes on with the next key group; the
// entries before them are read.
type Warning struct {
	// File is where the bytes lie, relative to the savepoint's directory;
	// KeyGroup is -1 for operator state.
	File     string
	KeyGroup int
	// Offset and Length say where in File, or, when Compressed, in the
	// key group's decompressed bytes.
	Offset, Length int64
	Compressed     bool
	// Operator is the operator's uid, State the state whose value stopped
	// the walk.
	Operator, State string
	// Class is the class of that value, Serializer the serializer that
	// wrote it.
	Class, Serializer string
	Message           string
}

func (w Warning) String() string {
	parts := []string{w.File}
	if w.KeyGroup >= 0 {
		parts = append(parts, "key group "+strconv.Itoa(w.KeyGroup))
	}
	where := "offset"
	if w.Compressed {
		where = "offset (decompressed)"
	}
	parts = append(parts, fmt.Sprintf("%d opaque bytes at %s %d", w.Length, where, w.Offset),
		fmt.Sprintf("operator %q state %q", w.Operator, w.State), w.Message)
	return strings.Join(parts, ": ")
}

// Warner is implemented by sources that skip such parts: Warnings returns
// those met so far by any iterator or by opening the source, each once.
type Warner interface {
	Warnings() []Warning
}

// Warnings returns the warnings of src so far, if it has any.
func Warnings(src Source) []Warning {
	if w, ok := src.(Warner); ok {
		return w.Warnings()
	}
	return nil
}
