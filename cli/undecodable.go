package cli

import (
	"fmt"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// undecodableValue is a stored value its serializer cannot decode: the
// framing is sound but the bytes are not what the snapshot says they are.
// It counts as corruption.
type undecodableValue struct {
	msg string
	err error
}

func (e *undecodableValue) Error() string   { return e.msg + ": " + e.err.Error() }
func (e *undecodableValue) Unwrap() []error { return []error{snapshotfmt.ErrCorrupt, e.err} }

// undecodable locates a decode failure: the iterator does not expose an
// entry's offset, so the error names the segment's and the entry's number
// within it.
func undecodable(m *savepoint.Metadata, seg snapshotfmt.Segment, n uint64, err error) error {
	op := &m.Operators[seg.Operator]
	what, name := "state", ""
	if seg.Ref < len(op.States) {
		name = op.States[seg.Ref].Name
	} else {
		what, name = "timer service", op.Timers[seg.Ref-len(op.States)].Name
	}
	return &snapshotfmt.Error{File: seg.File, KeyGroup: seg.KeyGroup, Offset: seg.Offset, Err: &undecodableValue{
		msg: fmt.Sprintf("operator %q %s %q: entry %d of the segment at this offset does not decode", op.UID, what, name, n),
		err: err,
	}}
}

// metadataCorrupt is a decode failure in what the metadata holds.
func metadataCorrupt(msg string, err error) error {
	return &snapshotfmt.Error{File: snapshotfmt.MetadataName, KeyGroup: -1, Offset: -1, Err: &undecodableValue{msg: msg, err: err}}
}
