package inspect

import (
	"fmt"

	"github.com/stateproc/stateproc/savepoint"
)

// undecodableValue is a stored value its serializer cannot decode: the
// framing is sound but the bytes are not what the snapshot says they are.
// It counts as corruption.
type undecodableValue struct {
	msg string
	err error
}

func (e *undecodableValue) Error() string   { return e.msg + ": " + e.err.Error() }
func (e *undecodableValue) Unwrap() []error { return []error{savepoint.ErrCorrupt, e.err} }

// Undecodable locates a decode failure in entry n of seg: iterators do not
// expose an entry's offset, so the error names the segment's and the
// entry's number within it. It wraps savepoint.ErrCorrupt and err.
func Undecodable(m *savepoint.Metadata, seg savepoint.Segment, n uint64, err error) error {
	off := seg.Offset
	if seg.File == "" {
		off = -1 // the segment lies in no file of the layout's own
	}
	return &savepoint.Error{File: seg.File, KeyGroup: seg.KeyGroup, Offset: off, Err: &undecodableValue{
		msg: fmt.Sprintf("%s: entry %d of the segment at this offset does not decode", m.Describe(seg.Ref), n),
		err: err,
	}}
}

// MetadataCorrupt is a decode failure in what the metadata holds: a
// serializer snapshot, an operator or broadcast state element.
func MetadataCorrupt(msg string, err error) error {
	return &savepoint.Error{File: savepoint.MetadataFile, KeyGroup: -1, Offset: -1, Err: &undecodableValue{msg: msg, err: err}}
}
