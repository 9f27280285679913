package cli

import (
	"io"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/stateproc/stateproc/rewrite"
)

// newProgress returns a progress bar over total bytes drawn on stderr, or
// nil when stderr is not a terminal (a pipe, a file, a test).
func newProgress(stderr io.Writer, total int64, what string) *progressbar.ProgressBar {
	if !stderrIsTerminal(stderr) {
		return nil
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish())
}

// endProgress takes a bar off the terminal, whether the work it followed
// succeeded or failed, so that the report or the error printed next starts
// on a clean line.
func endProgress(bar *progressbar.ProgressBar, err error) {
	if err == nil {
		bar.Finish()
	} else {
		bar.Clear()
	}
	bar.Exit()
}

// byteProgress draws a bar of the bytes of input a scan, a verification or
// a rewrite has processed on stderr when it is a terminal. The work learns
// its total once it has planned, so the bar is made at its first report;
// work that reads nothing, as most dry runs, draws none.
type byteProgress struct {
	stderr io.Writer
	what   string
	bar    *progressbar.ProgressBar
}

// newByteProgress returns nil when stderr is not a terminal.
func newByteProgress(stderr io.Writer, what string) *byteProgress {
	if !stderrIsTerminal(stderr) {
		return nil
	}
	return &byteProgress{stderr: stderr, what: what}
}

// options adds the bar to a rewrite's options.
func (p *byteProgress) options(opts rewrite.Options) rewrite.Options {
	if p != nil {
		opts.Progress = p.update
	}
	return opts
}

// report is the Progress of a scan or a verification, nil when there is no
// bar.
func (p *byteProgress) report() func(done, total int64) {
	if p == nil {
		return nil
	}
	return p.update
}

// update is the work's Progress: its meter calls it one call at a time.
func (p *byteProgress) update(done, total int64) {
	if p.bar == nil {
		p.bar = newProgress(p.stderr, total, p.what)
	}
	p.bar.Set64(done)
}

// end takes the bar off the terminal; the command calls it before it
// prints anything.
func (p *byteProgress) end(err error) {
	if p != nil && p.bar != nil {
		endProgress(p.bar, err)
	}
}
