package cli

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/clipperhouse/displaywidth"
)

// table renders the commands' text tables in box-drawing characters: a
// header centred in its cells, rows aligned left, a space of padding on
// either side of a cell. It draws what the tables looked like when they
// were drawn with tablewriter, whose package initialisation (a width cache
// built for every process) cost each command's start-up; a test renders
// random tables with both and compares the bytes.
type table struct {
	w      io.Writer
	header []string
	rows   [][]string
	// rawHeader leaves the header as written; otherwise it is upper-cased
	// and split into words at case changes, underscores and dots.
	rawHeader bool
	// wrap, when positive, wraps the rows' cells at spaces to lines of at
	// most wrap-2 columns, a word longer than that on a line of its own.
	wrap int
}

// newTable returns a table that renders to w.
func newTable(w io.Writer, header ...any) *table {
	t := &table{w: w}
	t.setHeader(header...)
	return t
}

func (t *table) setHeader(cells ...any) { t.header = cellStrings(cells) }

// Append adds a row.
func (t *table) Append(cells ...any) { t.rows = append(t.rows, cellStrings(cells)) }

// cellStrings turns a row's values into text; a single slice is the row.
func cellStrings(cells []any) []string {
	if len(cells) == 1 {
		switch v := cells[0].(type) {
		case []string:
			return append([]string(nil), v...)
		case []any:
			cells = v
		}
	}
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = cellString(c)
	}
	return out
}

func cellString(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(v)
	case error:
		return v.Error()
	case fmt.Stringer:
		return v.String()
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	case int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(v)
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 32)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprintf("%v", v)
}

// tabSpaces replaces a tab in a cell: a fixed width, where tablewriter's
// depended on the working directory and the terminal.
const tabSpaces = "        "

// Render writes the table.
func (t *table) Render() error {
	cols := len(t.header)
	for _, r := range t.rows {
		cols = max(cols, len(r))
	}
	if cols == 0 {
		return nil
	}
	var header [][]string
	if len(t.header) > 0 {
		header = t.cellLines(t.header, cols, !t.rawHeader, 0)
	}
	rows := make([][][]string, len(t.rows))
	for i, r := range t.rows {
		rows[i] = t.cellLines(r, cols, false, t.wrap)
	}
	widths := make([]int, cols)
	measure := func(lines [][]string) {
		for _, line := range lines {
			for c, s := range line {
				widths[c] = max(widths[c], textWidth(s)+2)
			}
		}
	}
	measure(header)
	for _, r := range rows {
		measure(r)
	}
	var b strings.Builder
	t.border(&b, widths, "┌", "┬", "┐")
	for _, line := range header {
		t.line(&b, widths, line, true)
	}
	if len(header) > 0 && len(rows) > 0 {
		t.border(&b, widths, "├", "┼", "┤")
	}
	for _, r := range rows {
		for i, line := range r {
			// A row's lines after its first are left out where every
			// cell is blank.
			if i > 0 && blankLine(line) {
				continue
			}
			t.line(&b, widths, line, false)
		}
	}
	t.border(&b, widths, "└", "┴", "┘")
	_, err := io.WriteString(t.w, b.String())
	return err
}

// cellLines lays a row out as lines: one line per line of its tallest
// cell, the shorter cells blank below their text.
func (t *table) cellLines(cells []string, cols int, format bool, wrap int) [][]string {
	var lines [][]string
	for c := range cols {
		s := ""
		if c < len(cells) {
			s = cells[c]
		}
		s = strings.ReplaceAll(strings.TrimSpace(s), "\t", tabSpaces)
		if format {
			s = headerText(s)
		}
		var cell []string
		for _, l := range strings.Split(s, "\n") {
			if wrap > 2 {
				cell = append(cell, wrapWords(l, wrap-2)...)
			} else {
				cell = append(cell, l)
			}
		}
		for len(lines) < len(cell) {
			lines = append(lines, make([]string, cols))
		}
		for i, l := range cell {
			lines[i][c] = l
		}
	}
	return lines
}

func blankLine(cells []string) bool {
	for _, s := range cells {
		if strings.TrimSpace(s) != "" {
			return false
		}
	}
	return true
}

func (t *table) border(b *strings.Builder, widths []int, left, mid, right string) {
	b.WriteString(left)
	for c, w := range widths {
		if c > 0 {
			b.WriteString(mid)
		}
		b.WriteString(strings.Repeat("─", w))
	}
	b.WriteString(right)
	b.WriteByte('\n')
}

func (t *table) line(b *strings.Builder, widths []int, cells []string, centre bool) {
	b.WriteString("│")
	for c, w := range widths {
		if c > 0 {
			b.WriteString("│")
		}
		s := cells[c]
		pad := max(w-textWidth(s), 0)
		left := 1
		if centre {
			left = (pad-2)/2 + 1
		}
		b.WriteString(strings.Repeat(" ", left))
		b.WriteString(s)
		b.WriteString(strings.Repeat(" ", pad-left))
	}
	b.WriteString("│\n")
}

// headerText is a header cell as tablewriter formatted it: words split at
// case changes and digits, underscores and most dots made spaces, all in
// upper case.
func headerText(s string) string {
	s = strings.Join(camelWords(s), " ")
	rs := []rune(s)
	numOrSpace := func(r rune) bool { return '0' <= r && r <= '9' || r == ' ' }
	for i, r := range rs {
		switch r {
		case '_':
			rs[i] = ' '
		case '.':
			if (i != 0 && !numOrSpace(rs[i-1])) || (i != len(rs)-1 && !numOrSpace(rs[i+1])) {
				rs[i] = ' '
			}
		}
	}
	out := strings.TrimSpace(string(rs))
	if out == "" && s != "" {
		out = " "
	}
	return strings.ToUpper(out)
}

// camelWords splits s into runs of lower-case letters, upper-case
// letters, digits and anything else, an upper-case letter before a
// lower-case one starting the lower-case run; blank runs and lone
// underscores are dropped.
func camelWords(s string) []string {
	if !utf8.ValidString(s) {
		return []string{s}
	}
	var runs [][]rune
	last := 0
	for _, r := range s {
		class := 4
		switch {
		case unicode.IsLower(r):
			class = 1
		case unicode.IsUpper(r):
			class = 2
		case unicode.IsDigit(r):
			class = 3
		}
		if class == last {
			runs[len(runs)-1] = append(runs[len(runs)-1], r)
		} else {
			runs = append(runs, []rune{r})
		}
		last = class
	}
	for i := 0; i+1 < len(runs); i++ {
		if unicode.IsUpper(runs[i][0]) && unicode.IsLower(runs[i+1][0]) {
			n := len(runs[i]) - 1
			runs[i+1] = append([]rune{runs[i][n]}, runs[i+1]...)
			runs[i] = runs[i][:n]
		}
	}
	var words []string
	for _, r := range runs {
		w := string(r)
		if len(r) > 0 && strings.TrimSpace(w) != "" && w != "_" {
			words = append(words, w)
		}
	}
	return words
}

// wrapWords breaks s at white space into lines of at most lim columns
// with the least raggedness (the sum over lines but the last of the
// square of the room left); a word wider than lim widens lim to its width.
func wrapWords(s string, lim int) []string {
	if s == " " {
		return []string{s}
	}
	words := strings.Fields(s)
	if len(words) == 0 {
		return []string{""}
	}
	n := len(words)
	lengths := make([]int, n)
	for i, w := range words {
		lengths[i] = textWidth(w)
	}
	for _, l := range lengths {
		lim = max(lim, l)
	}
	const penalty = 1e5
	next := make([]int, n)
	cost := make([]int, n)
	rest := lengths[n-1]
	for i := n - 1; i >= 0; i-- {
		if i < n-1 {
			rest += 1 + lengths[i]
		}
		if rest <= lim || i == n-1 {
			next[i] = n
			continue
		}
		cost[i] = 1<<31 - 1
		phrase := lengths[i]
		for j := i + 1; j < n; j++ {
			if j > i+1 {
				phrase += 1 + lengths[j-1]
			}
			d := lim - phrase
			c := d*d + cost[j]
			if phrase > lim {
				c += penalty
			}
			if c < cost[i] {
				cost[i], next[i] = c, j
			}
		}
	}
	var lines []string
	for i := 0; i < n; i = next[i] {
		lines = append(lines, strings.Join(words[i:next[i]], " "))
	}
	return lines
}

// ansiEscape matches the terminal escape sequences (CSI and OSC) that
// take no room on the screen. Compiled on first use: most tables hold
// none.
var ansiEscape = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("(\x1b\\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]|\x1b\\].*?(\x1b\\\\|\x07))")
})

// textWidth is the number of terminal columns s takes, East Asian
// ambiguous characters counted narrow whatever the locale.
func textWidth(s string) int {
	if strings.IndexByte(s, '\x1b') >= 0 {
		s = ansiEscape().ReplaceAllLiteralString(s, "")
	}
	var opts displaywidth.Options
	n := 0
	for _, r := range s {
		if r == '\t' {
			n += len(tabSpaces)
			continue
		}
		n += opts.Rune(r)
	}
	return n
}
