package evolve

import (
	"fmt"
	"strconv"

	"github.com/stateproc/stateproc/compat"
	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/serializers"
)

// Report is the verdict on every operator and state of the savepoint and
// the target, in the savepoint's order, then what only the target has.
type Report struct {
	Target string `json:"target"`
	// Restorable: no item is incompatible, so the target's job restores
	// the savepoint.
	Restorable bool   `json:"restorable"`
	Items      []Item `json:"items"`
	// Now is the last-modified time migrate gave to values whose state
	// gained TTL; zero when none did.
	Now jsonvalue.Instant `json:"now,omitempty"`
}

// Item is the verdict on one operator or state.
type Item struct {
	Operator string         `json:"operator"`
	What     compat.What    `json:"what"`
	Name     string         `json:"name,omitempty"`
	Kind     string         `json:"kind,omitempty"`
	Verdict  compat.Verdict `json:"verdict"`
	Reason   string         `json:"reason,omitempty"`
	// DataDependent: the schemas alone did not settle the verdict (a union
	// branch or enum symbol the new schema removed), so it comes from
	// reading the stored values.
	DataDependent bool `json:"data_dependent"`
	// Unreadable is the first value, in key-group order, that the new
	// serializer cannot read, which made a state incompatible.
	Unreadable *Location `json:"unreadable,omitempty"`
	// Migrated counts what migrate did with the data of a keyed state or
	// timer service; nil when it did not touch it (check, new, dropped).
	Migrated *Migrated `json:"migrated,omitempty"`

	finding compat.Finding
}

// Migrated counts what migrate did with the data of a keyed state or timer
// service: its entries and, when it rewrote them, the bytes of their values
// before and after (with the TTL timestamp).
type Migrated struct {
	Rewritten        bool   `json:"rewritten"`
	Entries          uint64 `json:"entries"`
	ValueBytesBefore uint64 `json:"value_bytes_before,omitempty"`
	ValueBytesAfter  uint64 `json:"value_bytes_after,omitempty"`
}

// Location places one entry of a savepoint.
type Location struct {
	File     string `json:"file"`
	KeyGroup int    `json:"key_group"`
	// Offset is that of the entry's segment in File; Entry counts the
	// entries before it in the segment.
	Offset int64  `json:"segment_offset"`
	Entry  uint64 `json:"entry"`
	Key    string `json:"key"`
}

func (l *Location) String() string {
	return fmt.Sprintf("key group %d, key %s: %s, segment at offset %d, entry %d", l.KeyGroup, l.Key, l.File, l.Offset, l.Entry)
}

// keyPrinter returns how a key of the serializer snap is shown in messages:
// decoded when it decodes, else its bytes quoted; cut short when long.
func keyPrinter(snap serializers.Snapshot) func(k []byte) string {
	ser, err := serializers.Restore(snap)
	return func(k []byte) string {
		if err == nil {
			if v, derr := ser.DecodeAny(k); derr == nil {
				return clip(fmt.Sprintf("%#v", v))
			}
		}
		return clip(strconv.Quote(string(k)))
	}
}

func clip(s string) string {
	const shown = 80
	if len(s) > shown {
		return s[:shown] + "..."
	}
	return s
}

func (r *Report) tally() {
	r.Restorable = len(r.Incompatible()) == 0
}

// Incompatible lists the items that keep the savepoint from being restored.
func (r *Report) Incompatible() []Item {
	var out []Item
	for _, it := range r.Items {
		if it.Verdict == compat.Incompatible {
			out = append(out, it)
		}
	}
	return out
}
