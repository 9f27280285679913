package cli

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfile is the --cpuprofile flag: a profile of the whole command,
// written when it ends, whether it succeeded or not.
type cpuProfile struct {
	path string
	f    *os.File
}

func (p *cpuProfile) start() error {
	if p.path == "" {
		return nil
	}
	f, err := os.Create(p.path)
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("--cpuprofile %s: %w", p.path, err)
	}
	p.f = f
	return nil
}

func (p *cpuProfile) stop() error {
	if p.f == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := p.f.Close()
	p.f = nil
	if err != nil {
		return fmt.Errorf("--cpuprofile %s: %w", p.path, err)
	}
	return nil
}
