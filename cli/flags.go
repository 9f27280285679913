package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/internal/jsonvalue"
)

// Output formats of --output.
const (
	outputTable = "table"
	outputJSON  = "json"
)

// addOutputFlag adds --output to cmd.
func addOutputFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVarP(p, "output", "o", outputTable, "output format: table or json")
}

func checkOutput(s string) error {
	if s != outputTable && s != outputJSON {
		return usagef("--output must be table or json, not %q", s)
	}
	return nil
}

// parseTime reads --now: RFC 3339 or milliseconds since the epoch.
func parseTime(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, usagef("time %q is neither RFC 3339 (2026-11-29T06:00:00Z) nor epoch milliseconds", s)
	}
	return t.UnixMilli(), nil
}

// givenEmpty refuses a flag given an empty value where leaving it out
// means a default: an empty --now is no time, not the savepoint's creation.
func givenEmpty(cmd *cobra.Command, name string) error {
	if f := cmd.Flags().Lookup(name); f != nil && f.Changed && strings.TrimSpace(f.Value.String()) == "" {
		return usagef("--%s is empty; leave it out for its default", name)
	}
	return nil
}

// parseDuration reads Go duration syntax with d for days: 7d, 36h, 1d12h.
func parseDuration(s string) (time.Duration, error) {
	rest := s
	var total time.Duration
	if i := strings.IndexByte(rest, 'd'); i >= 0 {
		days, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil || days < 0 {
			return 0, usagef("duration %q: bad number of days", s)
		}
		total = time.Duration(days * 24 * float64(time.Hour))
		rest = rest[i+1:]
	}
	if rest != "" {
		d, err := time.ParseDuration(rest)
		if err != nil {
			return 0, usagef("duration %q: use Go syntax plus d for days, e.g. 7d or 36h", s)
		}
		total += d
	}
	if total <= 0 {
		return 0, usagef("duration %q must be positive", s)
	}
	return total, nil
}

// cellText renders a decoded value for a table cell: strings as they are,
// anything else as compact JSON.
func cellText(v any) string {
	v = jsonvalue.Value(v)
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// formatTime renders epoch milliseconds for tables.
func formatTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// Type names such as map<string,int64> read better unescaped.
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// humanBytes renders a byte count in decimal units (the seeds' GB).
func humanBytes(n float64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB"}
	i := 0
	for n >= 1000 && i < len(units)-1 {
		n /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", n)
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}
