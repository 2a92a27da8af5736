package engine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// memoryProbe reports how much memory the process may still use before the
// system starts taking it away (OOM kill, swap). ok is false when the probe
// has no answer, for example no cgroup limit is set; the pressure check
// then does nothing.
type memoryProbe interface {
	Available() (avail int64, ok bool)
}

var (
	_ memoryProbe = cgroupMemory{}
	_ memoryProbe = budgetMemory{}
)

// Limits on what cgroupMemory reads. Real files are far smaller; a file over
// the limit is not a cgroup file and makes the probe report ok=false.
const (
	// maxCgroupFileBytes bounds each of memory.max, memory.current,
	// memory.stat and /proc/self/cgroup.
	maxCgroupFileBytes = 64 << 10
	// maxCgroupDepth bounds how many ancestor cgroups are inspected.
	maxCgroupDepth = 64
)

// cgroupMemory reads the cgroup v2 memory controller: for the process's
// cgroup and each ancestor that sets memory.max, available memory is
// memory.max − (memory.current − inactive_file from memory.stat), and the
// smallest of these is reported. Inactive file cache is counted as free
// because the kernel drops it before it would kill anything; bbolt's mapped
// file lives there.
//
// A limit of "max" everywhere, cgroup v1, or files that cannot be read or
// parsed give ok=false (no answer), so a caller falls back to budgetMemory.
// The zero value reads the real system.
type cgroupMemory struct {
	// Root is the cgroup v2 mount point; "" means /sys/fs/cgroup.
	Root string
	// Group is the process's cgroup relative to Root, such as
	// "/system.slice/mynahd.service". "" means the "0::" line of SelfCgroup.
	Group string
	// SelfCgroup is the file that names the process's cgroups; "" means
	// /proc/self/cgroup. Tests point it at a fixture.
	SelfCgroup string
}

// Available implements memoryProbe.
func (c cgroupMemory) Available() (int64, bool) {
	avail, limited, err := c.read()
	return avail, err == nil && limited
}

// read walks from the process's cgroup to the root. limited is false when
// no level sets a limit.
func (c cgroupMemory) read() (avail int64, limited bool, err error) {
	root := c.Root
	if root == "" {
		root = "/sys/fs/cgroup"
	}
	group := c.Group
	if group == "" {
		self := c.SelfCgroup
		if self == "" {
			self = "/proc/self/cgroup"
		}
		data, err := readCgroupFile(self)
		if err != nil {
			return 0, false, err
		}
		if group, err = parseSelfCgroup(data); err != nil {
			return 0, false, fmt.Errorf("%s: %w", self, err)
		}
	}
	group = path.Clean("/" + group)
	for depth := 0; depth < maxCgroupDepth; depth++ {
		a, ok, err := readCgroupLevel(filepath.Join(root, filepath.FromSlash(group)))
		if err != nil {
			return 0, false, err
		}
		if ok && (!limited || a < avail) {
			avail, limited = a, true
		}
		if group == "/" {
			return avail, limited, nil
		}
		group = path.Dir(group)
	}
	return 0, false, fmt.Errorf("cgroup deeper than %d levels (maxCgroupDepth)", maxCgroupDepth)
}

// readCgroupLevel returns the memory available under one cgroup's limit. ok
// is false when the level has no memory.max (the real root cgroup has none)
// or its memory.max is "max".
func readCgroupLevel(dir string) (int64, bool, error) {
	data, err := readCgroupFile(filepath.Join(dir, "memory.max"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	limit, limited, err := parseMemoryMax(data)
	if err != nil || !limited {
		return 0, false, err
	}
	data, err = readCgroupFile(filepath.Join(dir, "memory.current"))
	if err != nil {
		return 0, false, err
	}
	current, err := parseCgroupInt(data)
	if err != nil {
		return 0, false, fmt.Errorf("memory.current: %w", err)
	}
	var inactive int64
	// memory.stat only refines the figure; a missing or odd one is ignored.
	if data, err := readCgroupFile(filepath.Join(dir, "memory.stat")); err == nil {
		if v, err := parseMemoryStat(data, "inactive_file"); err == nil {
			inactive = min(v, current)
		}
	}
	return max(limit-(current-inactive), 0), true, nil
}

func readCgroupFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCgroupFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxCgroupFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes (maxCgroupFileBytes)", name, maxCgroupFileBytes)
	}
	return data, nil
}

// parseMemoryMax parses memory.max: a byte count, or "max" for no limit.
func parseMemoryMax(data []byte) (limit int64, limited bool, err error) {
	if strings.TrimSpace(string(data)) == "max" {
		return 0, false, nil
	}
	v, err := parseCgroupInt(data)
	if err != nil {
		return 0, false, fmt.Errorf("memory.max: %w", err)
	}
	return v, true, nil
}

// parseCgroupInt parses a file holding one non-negative byte count.
func parseCgroupInt(data []byte) (int64, error) {
	s := strings.TrimSpace(string(data))
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("want a byte count, got %q", cgroupQuote(s))
	}
	return v, nil
}

// parseMemoryStat returns the value of key in memory.stat ("key value"
// lines).
func parseMemoryStat(data []byte, key string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || name != key {
			continue
		}
		return parseCgroupInt([]byte(value))
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("memory.stat: %w", err)
	}
	return 0, fmt.Errorf("memory.stat: no %s line", key)
}

// parseSelfCgroup returns the cgroup v2 path from /proc/self/cgroup: the
// line "0::<path>".
func parseSelfCgroup(data []byte) (string, error) {
	for line := range strings.SplitSeq(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			if !strings.HasPrefix(p, "/") {
				return "", fmt.Errorf("cgroup v2 path %q is not absolute", cgroupQuote(p))
			}
			return p, nil
		}
	}
	return "", errors.New("no cgroup v2 (0::) line")
}

// cgroupQuote shortens outside input quoted in an error message.
func cgroupQuote(s string) string {
	const n = 40
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// budgetMemory is the probe for systems without a cgroup limit: a configured
// Budget minus what Used reports (for example the LRU's own Bytes, or the
// process's resident memory). Available may be negative when over budget;
// with this probe lruOptions.LowWater is the headroom to keep below the
// budget. A Budget ≤ 0 or a nil Used gives ok=false.
type budgetMemory struct {
	Budget int64
	Used   func() int64
}

// Available implements memoryProbe.
func (b budgetMemory) Available() (int64, bool) {
	if b.Budget <= 0 || b.Used == nil {
		return 0, false
	}
	return b.Budget - b.Used(), true
}

// relieveRateLimited runs the pressure check for a warm Get unless the last
// probe is younger than the probe gap.
func (s *sessionLRU[V]) relieveRateLimited() {
	if s.memory == nil || s.lowWater <= 0 {
		return
	}
	if s.probeGap > 0 && time.Now().UnixNano()-s.lastProbe.Load() < int64(s.probeGap) {
		return
	}
	s.relieve()
}

// relieve runs the memory-pressure check once.
func (s *sessionLRU[V]) relieve() {
	if s.memory == nil || s.lowWater <= 0 || !s.probing.TryLock() {
		return // another check is acting on a reading right now
	}
	defer s.probing.Unlock()
	s.lastProbe.Store(time.Now().UnixNano())
	avail, ok := s.memory.Available()
	if !ok || avail >= s.lowWater {
		return
	}
	var victims []*sessionEntry[V]
	var freed int64
	s.mu.Lock()
	for freed < s.lowWater-avail {
		e := s.victimLocked()
		if e == nil {
			break
		}
		victims = s.evictLocked(e, victims)
		s.stats.Evictions++
		s.stats.PressureEvictions++
		freed += e.size
		if e.size == 0 {
			break // what it gave back shows only in the next probe
		}
	}
	s.mu.Unlock()
	if len(victims) > 0 {
		s.log.Info("memory pressure: closed idle sessions",
			"available", avail, "low_water", s.lowWater, "sessions", len(victims), "bytes", freed)
	}
	s.closeEntries(victims)
}

func (s *sessionLRU[V]) tick(every time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stopTick:
			return
		case <-t.C:
			s.relieve()
		}
	}
}
