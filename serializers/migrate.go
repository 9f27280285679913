package serializers

import (
	"encoding/binary"
	"fmt"

	"github.com/stateproc/stateproc/internal/avrobin"
)

// Migrate rewrites one value from the old serializer's bytes to the new
// one's, appending to dst.
type Migrate func(dst, src []byte) ([]byte, error)

// MigrateOptions configures Migrator.
type MigrateOptions struct {
	// Now is the last-modified time, in milliseconds since the Unix epoch,
	// given to every value when TTL is turned on.
	Now int64
}

// Migrator returns the rewrite from old's encoding to new's for a pair that
// Check finds compatible. For a pair compatible as is it copies. Avro values
// are resolved from the writer schema to the reader schema and written in
// canonical form; TTL turned on prefixes opts.Now, turned off drops the
// timestamp.
func Migrator(old, new Snapshot, opts MigrateOptions) (Migrate, error) {
	switch c := Check(old, new); c.Verdict {
	case Incompatible:
		return nil, fmt.Errorf("serializers: no migration from %s to %s: %s", old, new, c.Reason)
	case CompatibleAsIs:
		return copyValue, nil
	}
	return migrator(old, new, opts)
}

func copyValue(dst, src []byte) ([]byte, error) { return append(dst, src...), nil }

// migrator builds the rewrite of a pair that Check found compatible, so its
// parts are compatible too.
func migrator(old, new Snapshot, opts MigrateOptions) (Migrate, error) {
	if Check(old, new).Verdict == CompatibleAsIs {
		return copyValue, nil
	}
	switch {
	case old.Kind == KindTTL && new.Kind != KindTTL:
		inner, err := migrator(old.Args[0], new, opts)
		if err != nil {
			return nil, err
		}
		return func(dst, src []byte) ([]byte, error) {
			if len(src) < 8 {
				return dst, decodeErr("ttl: want at least 8 bytes, got %d", len(src))
			}
			return inner(dst, src[8:])
		}, nil
	case new.Kind == KindTTL && old.Kind != KindTTL:
		inner, err := migrator(old, new.Args[0], opts)
		if err != nil {
			return nil, err
		}
		return func(dst, src []byte) ([]byte, error) {
			out, err := inner(binary.BigEndian.AppendUint64(dst, uint64(opts.Now)), src)
			if err != nil {
				return dst, err
			}
			return out, nil
		}, nil
	}
	switch old.Kind {
	case KindAvro:
		return avroMigrator(old.Schema, new.Schema)
	case KindTTL:
		inner, err := migrator(old.Args[0], new.Args[0], opts)
		if err != nil {
			return nil, err
		}
		return func(dst, src []byte) ([]byte, error) {
			if len(src) < 8 {
				return dst, decodeErr("ttl: want at least 8 bytes, got %d", len(src))
			}
			out, err := inner(append(dst, src[:8]...), src[8:])
			if err != nil {
				return dst, within(err, ErrDecode, "ttl value")
			}
			return out, nil
		}, nil
	case KindNullable:
		inner, err := migrator(old.Args[0], new.Args[0], opts)
		if err != nil {
			return nil, err
		}
		return func(dst, src []byte) ([]byte, error) {
			present, elem, err := splitNullable(src)
			if err != nil {
				return dst, err
			}
			if !present {
				return append(dst, 0), nil
			}
			out, err := inner(append(dst, 1), elem)
			if err != nil {
				return dst, within(err, ErrDecode, "nullable")
			}
			return out, nil
		}, nil
	case KindList:
		inner, err := migrator(old.Args[0], new.Args[0], opts)
		if err != nil {
			return nil, err
		}
		return listMigrator(inner), nil
	case KindMap:
		inner, err := migrator(old.Args[1], new.Args[1], opts)
		if err != nil {
			return nil, err
		}
		return mapMigrator(inner), nil
	}
	return nil, fmt.Errorf("serializers: no migration from %s to %s", old, new)
}

func avroMigrator(old, new string) (Migrate, error) {
	w, _, err := parseAvroSchema(old)
	if err != nil {
		return nil, err
	}
	r, compact, err := parseAvroSchema(new)
	if err != nil {
		return nil, err
	}
	defs, err := avrobin.FieldDefaults(compact)
	if err != nil {
		return nil, fmt.Errorf("avro: %w", err)
	}
	p, err := compileAvro(w, r, defs)
	if err != nil {
		return nil, fmt.Errorf("serializers: no migration of the Avro schema: %w", err)
	}
	return func(dst, src []byte) ([]byte, error) { return transcode(p, dst, src) }, nil
}

func listMigrator(elem Migrate) Migrate {
	return func(dst, src []byte) ([]byte, error) {
		f := frames{kind: KindList, src: src}
		n, err := f.count(1)
		if err != nil {
			return dst, err
		}
		out := binary.AppendUvarint(dst, uint64(n))
		for i := range n {
			b, err := f.frame("element")
			if err != nil {
				return dst, err
			}
			var at int
			out, at = beginFrame(out)
			if out, err = elem(out, b); err != nil {
				return dst, within(err, ErrDecode, "list element %d", i)
			}
			out = endFrame(out, at)
		}
		if err := f.end(); err != nil {
			return dst, err
		}
		return out, nil
	}
}

// mapMigrator rewrites the values; keys stay as they are (Check insists),
// and so does their order.
func mapMigrator(val Migrate) Migrate {
	return func(dst, src []byte) ([]byte, error) {
		// readEntries checks the count; a bad one makes it fail.
		n, _ := binary.Uvarint(src)
		out := binary.AppendUvarint(dst, n)
		err := readEntries(src, func(i int, kb, vb []byte) error {
			out = binary.AppendUvarint(out, uint64(len(kb)))
			out = append(out, kb...)
			var at int
			var err error
			out, at = beginFrame(out)
			if out, err = val(out, vb); err != nil {
				return within(err, ErrDecode, "map value %d", i)
			}
			out = endFrame(out, at)
			return nil
		})
		if err != nil {
			return dst, err
		}
		return out, nil
	}
}
