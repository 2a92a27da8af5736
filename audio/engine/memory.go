package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
)

// sessionOptions translates voices.sessions into the session cache's
// options. def, the default voice, is pinned whatever the config says.
func sessionOptions(sc SessionOptions, def string,
	load func(context.Context, string) (*loadedVoice, int64, error),
	unload func(*loadedVoice) error, log *slog.Logger,
) *lruOptions[*loadedVoice] {
	pinned := append([]string{def}, sc.Pinned...)
	var budget memoryProbe
	if sc.MemoryBudget > 0 {
		budget = budgetMemory{Budget: sc.MemoryBudget, Used: anonResidentBytes}
	}
	return &lruOptions[*loadedVoice]{
		Load:           load,
		Close:          unload,
		MaxCount:       sc.MaxCount,
		MaxBytes:       sc.MaxBytes,
		Pinned:         pinned,
		Memory:         sessionMemory{cgroup: cgroupMemory{}, budget: budget},
		LowWater:       sc.LowWater,
		MemoryInterval: sc.CheckInterval,
		Logger:         log,
	}
}

// sessionMemory is the memory probe behind voices.sessions.low_water: the
// cgroup's limit where one is set (systemd's MemoryMax=, a container's
// limit), because that is what the kernel enforces; else the configured
// budget; else no answer, and no voice is closed for pressure.
type sessionMemory struct {
	cgroup memoryProbe
	budget memoryProbe // nil without voices.sessions.memory_budget
	// relieve, when memory is below lowWater, frees what is cheapest to
	// rebuild (the cloning voices' KV state) before the session cache
	// closes voices, and returns the bytes it freed.
	lowWater int64
	relieve  func(shortfall int64) int64
}

var _ memoryProbe = sessionMemory{}

// Available implements memoryProbe. What relieve frees counts as
// available at once: the Go heap gives it back to the kernel only later.
func (m sessionMemory) Available() (int64, bool) {
	avail, ok := m.probe()
	if ok && m.relieve != nil && avail < m.lowWater {
		avail += m.relieve(m.lowWater - avail)
	}
	return avail, ok
}

func (m sessionMemory) probe() (int64, bool) {
	if avail, ok := m.cgroup.Available(); ok {
		return avail, true
	}
	if m.budget == nil {
		return 0, false
	}
	return m.budget.Available()
}

// maxStatmBytes bounds what is read of /proc/self/statm: seven numbers,
// well under 100 bytes on any real system.
const maxStatmBytes = 4 << 10

// statmPath is the file anonResidentBytes reads.
const statmPath = "/proc/self/statm"

// anonResidentBytes is the process's resident memory that is not backed by
// a file: the Go heap and ONNX Runtime's allocations, the memory a budget is
// about. Mapped files (the phrase cache's bbolt file, the binary, the ONNX
// Runtime library) are left out because the kernel can drop those pages at
// any time, as the cgroup probe counts inactive file pages as free. It is 0
// when /proc cannot be read: a budget then sees nothing used and closes
// nothing.
func anonResidentBytes() int64 {
	f, err := os.Open(statmPath)
	if err != nil {
		return 0
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStatmBytes+1))
	if err != nil {
		return 0
	}
	resident, shared, err := parseStatm(data, int64(os.Getpagesize()))
	if err != nil {
		return 0
	}
	return max(resident-shared, 0)
}

var errStatm = errors.New("not a /proc/PID/statm line")

// parseStatm returns the resident and the shared (file-backed) bytes from
// the contents of /proc/PID/statm: space-separated page counts, of which
// the second is the resident set and the third its file-backed share. At
// most maxStatmBytes are accepted.
func parseStatm(data []byte, pageSize int64) (resident, shared int64, err error) {
	if len(data) > maxStatmBytes {
		return 0, 0, fmt.Errorf("%w: larger than %d bytes (maxStatmBytes)", errStatm, maxStatmBytes)
	}
	if pageSize <= 0 {
		return 0, 0, fmt.Errorf("%w: page size %d", errStatm, pageSize)
	}
	fields := bytes.Fields(data)
	if len(fields) < 3 {
		return 0, 0, fmt.Errorf("%w: %d fields, want at least 3", errStatm, len(fields))
	}
	var vals [2]int64
	for i, name := range []string{"resident", "shared"} {
		pages, err := strconv.ParseInt(string(fields[i+1]), 10, 64)
		if err != nil || pages < 0 {
			return 0, 0, fmt.Errorf("%w: %s %.20q is not a page count", errStatm, name, fields[i+1])
		}
		if pages > (1<<62)/pageSize {
			return 0, 0, fmt.Errorf("%w: %s %d pages of %d bytes overflow", errStatm, name, pages, pageSize)
		}
		vals[i] = pages * pageSize
	}
	return vals[0], vals[1], nil
}
