package cli

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/tw"
)

// tablewriterRender renders a table with tablewriter, configured as the
// commands configured it before they drew their own tables.
func tablewriterRender(t *testing.T, header []any, rows [][]any, rawHeader bool, wrap int) string {
	t.Helper()
	var b bytes.Buffer
	tab := tablewriter.NewWriter(&b)
	if rawHeader {
		tab.Options(tablewriter.WithHeaderAutoFormat(tw.Off))
	}
	if wrap > 0 {
		tab.Options(tablewriter.WithRowAutoWrap(tw.WrapNormal), tablewriter.WithRowMaxWidth(wrap))
	}
	tab.Header(header...)
	for _, r := range rows {
		if err := tab.Append(r...); err != nil {
			t.Fatal(err)
		}
	}
	if err := tab.Render(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func ownRender(t *testing.T, header []any, rows [][]any, rawHeader bool, wrap int) string {
	t.Helper()
	var b bytes.Buffer
	tab := newTable(&b, header...)
	tab.rawHeader, tab.wrap = rawHeader, wrap
	for _, r := range rows {
		tab.Append(r...)
	}
	if err := tab.Render(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// words are the pieces random cells are made of: what the commands put in
// tables (names, numbers, sizes, reasons), wide and combining characters,
// an escape sequence, line breaks and spaces at either end.
var words = []string{
	"events", "tenant-cost", "usd_total", "P50", "0-25%", "BYTES/ENTRY", "Key.Group", "keyGroup", "ID2x",
	"avro:stateproc.examples.gatewaymeter.OpenRequest", "1h", "-", "", " ", "2.8 kB", "12345678",
	"値", "状態の名前", "é", "e\u0301", "👍", "\x1b[31mred\x1b[0m", "a\nb", "x  y", " lead", "trail ",
	"incompatible: the serializer changed from int64 to string and no migration is registered",
	"a.b.c", "_x_", "v1.2", "SELECT", "camelCaseWord", "HTTPServer",
}

// randomCell is a cell's value. An error is a cell only beside others:
// alone in a row, tablewriter took it for a struct of no fields.
func randomCell(r *rand.Rand, alone bool) any {
	k := r.IntN(8)
	if alone && k == 3 {
		k = 4
	}
	switch k {
	case 0:
		return r.Int64N(1 << 40)
	case 1:
		return r.IntN(1000)
	case 2:
		return r.Float64() * 1000
	case 3:
		return errors.New(words[r.IntN(len(words))])
	}
	n := 1 + r.IntN(4)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = words[r.IntN(len(words))]
	}
	return strings.Join(parts, []string{" ", "", "_", "\n"}[r.IntN(4)])
}

// TestTableMatchesTablewriter renders random tables with the commands'
// table and with tablewriter and compares them byte for byte, in the
// three forms the commands use: headers formatted, headers as written,
// and rows wrapped at 72 columns. Tabs are left out: tablewriter's tab
// width depends on the working directory and the terminal.
func TestTableMatchesTablewriter(t *testing.T) {
	if twwidth.IsEastAsian() {
		t.Skip("tablewriter counts ambiguous-width characters wide in this locale; the commands' table does not")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 1500 {
		cols := 1 + r.IntN(6)
		header := make([]any, cols)
		for c := range header {
			header[c] = words[r.IntN(len(words))]
		}
		rows := make([][]any, r.IntN(5))
		for j := range rows {
			rows[j] = make([]any, cols)
			for c := range rows[j] {
				rows[j][c] = randomCell(r, cols == 1)
			}
		}
		rawHeader := i%3 == 1
		wrap := 0
		if i%3 == 2 {
			wrap = 72
		}
		want := tablewriterRender(t, header, rows, rawHeader, wrap)
		got := ownRender(t, header, rows, rawHeader, wrap)
		if got != want {
			t.Fatalf("table %d (raw header %v, wrap %d) header %q rows %q:\ngot\n%s\nwant\n%s", i, rawHeader, wrap, header, rows, got, want)
		}
	}
}

// TestTableTabs pins what the comparison leaves out: a tab is 8 spaces,
// in the cell and in its column's width.
func TestTableTabs(t *testing.T) {
	got := ownRender(t, []any{"K"}, [][]any{{"a\tb"}}, false, 0)
	want := "┌────────────┐\n" +
		"│     K      │\n" +
		"├────────────┤\n" +
		"│ a        b │\n" +
		"└────────────┘\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
