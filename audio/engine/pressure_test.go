package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeCgroupTree writes files (relative path → content) under a temp root.
func writeCgroupTree(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// A memory.stat as the kernel writes it, shortened.
const realMemoryStat = `anon 104857600
file 52428800
kernel 4194304
kernel_stack 262144
pagetables 1048576
shmem 0
file_mapped 8388608
file_dirty 0
inactive_anon 0
active_anon 104857600
inactive_file 41943040
active_file 10485760
unevictable 0
`

func TestCgroupMemory(t *testing.T) {
	const svc = "system.slice/mynahd.service"
	tests := []struct {
		name      string
		files     map[string]string
		group     string
		wantAvail int64
		wantOK    bool
	}{
		{
			name: "service limit with reclaimable cache",
			files: map[string]string{
				"self":                        "0::/" + svc + "\n",
				"system.slice/memory.max":     "max\n",
				svc + "/memory.max":           "268435456\n",
				svc + "/memory.current":       "167772160\n",
				svc + "/memory.stat":          realMemoryStat,
				"system.slice/memory.stat":    realMemoryStat,
				"system.slice/memory.current": "999999999\n",
			},
			// 256 MiB − (160 MiB − 40 MiB inactive file)
			wantAvail: 268435456 - (167772160 - 41943040), wantOK: true,
		},
		{
			name: "no memory.stat: current counts in full",
			files: map[string]string{
				"self":                  "0::/" + svc + "\n",
				svc + "/memory.max":     "268435456\n",
				svc + "/memory.current": "167772160\n",
			},
			wantAvail: 268435456 - 167772160, wantOK: true,
		},
		{
			name: "tighter parent slice wins",
			files: map[string]string{
				"self":                        "0::/" + svc + "\n",
				"system.slice/memory.max":     "200000000\n",
				"system.slice/memory.current": "150000000\n",
				svc + "/memory.max":           "268435456\n",
				svc + "/memory.current":       "100000000\n",
			},
			wantAvail: 50000000, wantOK: true,
		},
		{
			name: "container: limit at the namespace root",
			files: map[string]string{
				"self":           "0::/\n",
				"memory.max":     "1073741824\n",
				"memory.current": "73741824\n",
			},
			wantAvail: 1000000000, wantOK: true,
		},
		{
			name: "over the limit reports zero",
			files: map[string]string{
				"self":           "0::/\n",
				"memory.max":     "1000\n",
				"memory.current": "5000\n",
			},
			wantAvail: 0, wantOK: true,
		},
		{
			name: "max everywhere: no answer",
			files: map[string]string{
				"self":                  "0::/" + svc + "\n",
				svc + "/memory.max":     "max\n",
				svc + "/memory.current": "100\n",
			},
		},
		{
			name: "cgroup v1 only: no answer",
			files: map[string]string{
				"self": "4:memory:/user.slice\n1:cpu:/\n",
			},
		},
		{
			name: "hybrid host without a v2 memory controller: no answer",
			files: map[string]string{
				"self": "4:memory:/process_api/x\n0::/\n",
			},
		},
		{
			name: "limit without memory.current: no answer",
			files: map[string]string{
				"self":              "0::/" + svc + "\n",
				svc + "/memory.max": "1000\n",
			},
		},
		{
			name: "garbage memory.max: no answer",
			files: map[string]string{
				"self":              "0::/" + svc + "\n",
				svc + "/memory.max": "lots\n",
			},
		},
		{
			name: "Group given: self file not read",
			files: map[string]string{
				"a/memory.max":     "100\n",
				"a/memory.current": "40\n",
			},
			group:     "/a",
			wantAvail: 60, wantOK: true,
		},
		{
			name: "dot-dot in group stays under root",
			files: map[string]string{
				"memory.max":     "100\n",
				"memory.current": "10\n",
			},
			group:     "/../../..",
			wantAvail: 90, wantOK: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := writeCgroupTree(t, tt.files)
			c := cgroupMemory{Root: root, Group: tt.group, SelfCgroup: filepath.Join(root, "self")}
			avail, ok := c.Available()
			if avail != tt.wantAvail || ok != tt.wantOK {
				_, _, err := c.read()
				t.Errorf("Available() = %d, %v; want %d, %v (read error: %v)", avail, ok, tt.wantAvail, tt.wantOK, err)
			}
		})
	}
}

func TestCgroupMemoryMissingFiles(t *testing.T) {
	root := t.TempDir()
	c := cgroupMemory{Root: root, SelfCgroup: filepath.Join(root, "nope")}
	if _, ok := c.Available(); ok {
		t.Error("ok without a self cgroup file")
	}
	big := filepath.Join(root, "big")
	if err := os.WriteFile(big, []byte("0::/"+strings.Repeat("a", maxCgroupFileBytes)), 0o644); err != nil {
		t.Fatal(err)
	}
	c.SelfCgroup = big
	if _, _, err := c.read(); err == nil || !strings.Contains(err.Error(), "maxCgroupFileBytes") {
		t.Errorf("oversized file: %v, want an error naming maxCgroupFileBytes", err)
	}
}

func TestParseMemoryMax(t *testing.T) {
	tests := []struct {
		in          string
		limit       int64
		limited, ok bool
	}{
		{"max\n", 0, false, true},
		{"max", 0, false, true},
		{"268435456\n", 268435456, true, true},
		{"0\n", 0, true, true},
		{"9223372036854775807\n", 9223372036854775807, true, true},
		{"9223372036854775808\n", 0, false, false},
		{"-1\n", 0, false, false},
		{"", 0, false, false},
		{"12 34\n", 0, false, false},
		{"MAX\n", 0, false, false},
	}
	for _, tt := range tests {
		limit, limited, err := parseMemoryMax([]byte(tt.in))
		if limit != tt.limit || limited != tt.limited || (err == nil) != tt.ok {
			t.Errorf("parseMemoryMax(%q) = %d, %v, %v; want %d, %v, ok=%v", tt.in, limit, limited, err, tt.limit, tt.limited, tt.ok)
		}
	}
}

func TestParseMemoryStat(t *testing.T) {
	tests := []struct {
		in, key string
		want    int64
		ok      bool
	}{
		{realMemoryStat, "inactive_file", 41943040, true},
		{realMemoryStat, "anon", 104857600, true},
		{realMemoryStat, "inactive", 0, false}, // a prefix is not a key
		{"inactive_file 12", "inactive_file", 12, true},
		{"inactive_file\n", "inactive_file", 0, false},
		{"inactive_file x\n", "inactive_file", 0, false},
		{"", "inactive_file", 0, false},
	}
	for _, tt := range tests {
		got, err := parseMemoryStat([]byte(tt.in), tt.key)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("parseMemoryStat(%.20q, %q) = %d, %v; want %d, ok=%v", tt.in, tt.key, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseSelfCgroup(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"0::/system.slice/mynahd.service\n", "/system.slice/mynahd.service", true},
		{"0::/\n", "/", true},
		{"12:memory:/x\n0::/user.slice/user-1000.slice/session-2.scope\n", "/user.slice/user-1000.slice/session-2.scope", true},
		{"0::relative\n", "", false},
		{"4:memory:/x\n", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, err := parseSelfCgroup([]byte(tt.in))
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("parseSelfCgroup(%q) = %q, %v; want %q, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestBudgetMemory(t *testing.T) {
	used := int64(300)
	b := budgetMemory{Budget: 1000, Used: func() int64 { return used }}
	if avail, ok := b.Available(); avail != 700 || !ok {
		t.Errorf("Available() = %d, %v; want 700, true", avail, ok)
	}
	used = 1200
	if avail, ok := b.Available(); avail != -200 || !ok {
		t.Errorf("over budget: Available() = %d, %v; want -200, true", avail, ok)
	}
	if _, ok := (budgetMemory{Budget: 1000}).Available(); ok {
		t.Error("ok without Used")
	}
	if _, ok := (budgetMemory{Used: func() int64 { return 0 }}).Available(); ok {
		t.Error("ok without Budget")
	}
}

// FuzzCgroupFiles feeds one input to every cgroup file parser: none may
// panic, and what they accept must be well-formed.
func FuzzCgroupFiles(f *testing.F) {
	for _, s := range []string{"max\n", "268435456\n", "-1", "", realMemoryStat,
		"0::/system.slice/mynahd.service\n", "4:memory:/x\n0::/\n", "0::rel", "inactive_file 9999999999999999999999\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if limit, limited, err := parseMemoryMax(data); err == nil && (limit < 0 || (!limited && limit != 0)) {
			t.Errorf("parseMemoryMax(%q) = %d, %v", data, limit, limited)
		}
		if v, err := parseCgroupInt(data); err == nil && v < 0 {
			t.Errorf("parseCgroupInt(%q) = %d", data, v)
		}
		if v, err := parseMemoryStat(data, "inactive_file"); err == nil && v < 0 {
			t.Errorf("parseMemoryStat(%q) = %d", data, v)
		}
		if p, err := parseSelfCgroup(data); err == nil && !strings.HasPrefix(p, "/") {
			t.Errorf("parseSelfCgroup(%q) = %q", data, p)
		}
	})
}
