package rocksdb

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/stateproc/stateproc/flinkfmt/rocksdb/sst"
	"github.com/stateproc/stateproc/storage"
)

// MaxOptionsSize bounds an OPTIONS file. Flink's run to about 4 KiB per
// column family; a job with a thousand states stays far below this.
const MaxOptionsSize = 16 << 20

// Options is what a RocksDB OPTIONS file says that a reader of the tables
// needs; every other option is skipped.
type Options struct {
	// RocksDBVersion is the release that wrote the file ("6.20.3" for
	// Flink 1.20's FRocksDB, "8.10.0" for Flink 2.0).
	RocksDBVersion string
	// ColumnFamilies are in file order.
	ColumnFamilies []ColumnFamilyOptions
}

// ColumnFamilyOptions are one column family's options.
type ColumnFamilyOptions struct {
	Name       string
	Comparator string
	// MergeOperator is the operator's name, "" when the file says
	// nullptr.
	MergeOperator string
	// Delimiter is the string-append operator's delimiter when the file
	// names one (RocksDB 7 and later write {id=...;delimiter=...;}); nil
	// when it does not, and the operator then joins with ','.
	Delimiter []byte
	// The table options of the column family.
	FormatVersion string
	Checksum      string
	Compression   string
}

// ColumnFamily returns the options of the named column family.
func (o *Options) ColumnFamily(name string) (*ColumnFamilyOptions, bool) {
	for i := range o.ColumnFamilies {
		if o.ColumnFamilies[i].Name == name {
			return &o.ColumnFamilies[i], true
		}
	}
	return nil, false
}

// ReadOptions reads and parses an OPTIONS file; name is used in errors.
func ReadOptions(f storage.File, name string) (*Options, error) {
	size := f.Size()
	if size > MaxOptionsSize {
		return nil, sst.At(name, -1, sst.Corruptf("OPTIONS file of %d bytes, more than %d", size, MaxOptionsSize))
	}
	b := make([]byte, size)
	if n, err := f.ReadAt(b, 0); n != len(b) {
		if err == nil || err == io.EOF {
			err = sst.Corruptf("truncated: %d of %d bytes", n, len(b))
		}
		return nil, sst.At(name, 0, err)
	}
	return ParseOptions(b, name)
}

// ParseOptions parses the bytes of an OPTIONS file: sections in brackets,
// "name=value" lines, '#' comments. Errors give the byte offset of the
// line.
func ParseOptions(b []byte, name string) (*Options, error) {
	o := &Options{}
	var section, arg string
	var cf *ColumnFamilyOptions
	for off := 0; off < len(b); {
		end := bytes.IndexByte(b[off:], '\n')
		if end < 0 {
			end = len(b) - off
		}
		line := strings.TrimSpace(string(b[off : off+end]))
		lineOff := int64(off)
		off += end + 1
		bad := func(format string, args ...any) error {
			return sst.At(name, lineOff, sst.Corruptf("OPTIONS line %q: "+format, append([]any{line}, args...)...))
		}
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			var err error
			if section, arg, err = parseSection(line); err != nil {
				return nil, bad("%v", err)
			}
			cf = nil
			switch section {
			case "CFOptions":
				if _, dup := o.ColumnFamily(arg); dup {
					return nil, bad("column family %q twice", arg)
				}
				o.ColumnFamilies = append(o.ColumnFamilies, ColumnFamilyOptions{Name: arg})
				cf = &o.ColumnFamilies[len(o.ColumnFamilies)-1]
			case "TableOptions/BlockBasedTable":
				var ok bool
				if cf, ok = o.ColumnFamily(arg); !ok {
					return nil, bad("table options of unknown column family %q", arg)
				}
			}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			return nil, bad("not a name=value line in a section")
		}
		key, value = strings.TrimSpace(key), unescape(strings.TrimSpace(value))
		switch {
		case section == "Version" && key == "rocksdb_version":
			o.RocksDBVersion = value
		case section == "CFOptions" && key == "comparator":
			cf.Comparator = value
		case section == "CFOptions" && key == "merge_operator":
			if err := cf.setMergeOperator(value); err != nil {
				return nil, bad("%v", err)
			}
		case section == "CFOptions" && key == "compression":
			cf.Compression = value
		case section == "TableOptions/BlockBasedTable" && key == "format_version":
			cf.FormatVersion = value
		case section == "TableOptions/BlockBasedTable" && key == "checksum":
			cf.Checksum = value
		}
	}
	return o, nil
}

// parseSection splits `[Name]` or `[Name "argument"]`.
func parseSection(line string) (string, string, error) {
	if !strings.HasSuffix(line, "]") {
		return "", "", fmt.Errorf("section header without ]")
	}
	inner := strings.TrimSpace(line[1 : len(line)-1])
	name, rest, hasArg := strings.Cut(inner, " ")
	if !hasArg {
		return name, "", nil
	}
	rest = strings.TrimSpace(rest)
	if len(rest) < 2 || rest[0] != '"' || rest[len(rest)-1] != '"' {
		return "", "", fmt.Errorf("section argument is not quoted")
	}
	return name, unescape(rest[1 : len(rest)-1]), nil
}

// unescape undoes RocksDB's EscapeOptionString: a backslash quotes the
// next character, with \n and \r for line breaks.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			switch c = s[i]; c {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// setMergeOperator reads "nullptr", a bare name, or RocksDB 7's nested
// form "{id=Name;delimiter=,;}".
func (cf *ColumnFamilyOptions) setMergeOperator(v string) error {
	switch {
	case v == "nullptr" || v == "":
		cf.MergeOperator = ""
	case v[0] == '{':
		if !strings.HasSuffix(v, "}") {
			return fmt.Errorf("merge_operator without closing brace")
		}
		for _, field := range splitFields(v[1 : len(v)-1]) {
			k, val, ok := strings.Cut(field, "=")
			if !ok {
				return fmt.Errorf("merge_operator field %q is not name=value", field)
			}
			switch k {
			case "id":
				cf.MergeOperator = val
			case "delimiter":
				cf.Delimiter = []byte(val)
			}
		}
		if cf.MergeOperator == "" {
			return fmt.Errorf("merge_operator without id")
		}
	default:
		cf.MergeOperator = v
	}
	return nil
}

// splitFields splits on ';'. A value written as the single character ';'
// cannot be told from a separator; the one place it matters, a delimiter,
// is taken as written when the field is "delimiter=" followed by ";;".
func splitFields(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ';')
		if i < 0 {
			out = append(out, s)
			break
		}
		if strings.HasSuffix(s[:i], "=") && strings.HasPrefix(s[i:], ";;") {
			i++ // "delimiter=;;": the value is ";"
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
	return out
}
