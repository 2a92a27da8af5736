package main

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/cmd/internal/memory"
)

const unitFile = "../../systemd/mynahd.service"

// maxExposure is the highest `systemd-analyze security` score the unit may
// have (the README quotes the measured figure).
const maxExposure = 2.5

// TestUnitSecurityScore runs systemd's own sandbox assessment on the unit.
func TestUnitSecurityScore(t *testing.T) {
	bin, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatalf("systemd-analyze not found (%v): it ships with systemd; on Debian/Ubuntu apt-get install systemd", err)
	}
	cmd := exec.Command(bin, "security", "--offline=yes", "--no-pager", unitFile)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for mynahd\.service: ([0-9.]+) `).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no overall exposure line in:\n%s", out)
	}
	score, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("systemd-analyze security --offline=yes: %.1f", score)
	if score > maxExposure {
		t.Fatalf("exposure %.1f is above %.1f:\n%s", score, maxExposure, out)
	}
}

// readUnit returns the unit's assignments, key → values in file order.
func readUnit(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kv := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("unit line %q is not key=value", line)
		}
		kv[k] = append(kv[k], v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return kv
}

// TestUnitKeepsWhatMynahdNeeds guards the settings the daemon depends on
// against a well-meant tightening: ONNX Runtime needs writable+executable
// memory and /proc/cpuinfo, ALSA needs /dev/snd, sd_notify needs
// Type=notify, and install.sh puts the files where the unit looks.
func TestUnitKeepsWhatMynahdNeeds(t *testing.T) {
	kv := readUnit(t)
	want := map[string]string{
		"Type":                     "notify",
		"NotifyAccess":             "main",
		"WatchdogSec":              "30",
		"Restart":                  "on-failure",
		"RestartPreventExitStatus": strconv.Itoa(exitConfigError),
		"DynamicUser":              "yes",
		"SupplementaryGroups":      "audio",
		"StateDirectory":           "mynah",
		"CacheDirectory":           "mynah",
		"ConfigurationDirectory":   "mynah",
		"MemoryDenyWriteExecute":   "no",
		"ProcSubset":               "all",
		"PrivateDevices":           "no",
		"DevicePolicy":             "closed",
		"DeviceAllow":              "char-alsa rw",
		"ExecStart":                "/usr/local/bin/mynahd -config " + config.DefaultPath,
		"Environment":              "MYNAH_ORT_LIB=/usr/local/lib/mynah/libonnxruntime.so.1",
	}
	for k, v := range want {
		if !slices.Contains(kv[k], v) {
			t.Errorf("unit: %s=%s missing (have %q)", k, v, kv[k])
		}
	}
	if !strings.Contains(strings.Join(kv["RestrictAddressFamilies"], " "), "AF_UNIX") {
		t.Error("unit: sd_notify and the journal need AF_UNIX")
	}
	// The voices directory default is the unit's StateDirectory.
	if d := config.Default().Voices.Dir; !strings.HasPrefix(d, "/var/lib/mynah/") {
		t.Errorf("voices.dir default %q is outside StateDirectory=mynah", d)
	}
	// The watchdog must outlast a stall check: WatchdogSec/2 pings.
	if sec, _ := strconv.Atoi(kv["WatchdogSec"][0]); sec < 2 {
		t.Errorf("WatchdogSec=%d too short for mynahd's ping interval", sec)
	}
	// No secret in the unit.
	for _, e := range kv["Environment"] {
		if strings.Contains(e, config.EnvMQTTPassword) {
			t.Errorf("unit sets %s: secrets belong in a credential or drop-in", config.EnvMQTTPassword)
		}
	}
}

// TestUnitMemoryLimits checks the unit's memory settings against mynahd's:
// MemoryHigh is MemoryMax less voices.sessions.low_water (the kernel
// starts reclaiming where mynahd starts closing idle voices), MemoryMax
// leaves room above the demo voice's soak budget, and MALLOC_ARENA_MAX
// is the arena limit mynahd sets itself.
func TestUnitMemoryLimits(t *testing.T) {
	kv := readUnit(t)
	size := func(key string) int64 {
		t.Helper()
		v := kv[key]
		if len(v) != 1 {
			t.Fatalf("unit: want one %s=, have %q", key, v)
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(v[0], "M"), 10, 64)
		if err != nil || !strings.HasSuffix(v[0], "M") {
			t.Fatalf("unit: %s=%s: want a size in M", key, v[0])
		}
		return n << 20
	}
	high, hard := size("MemoryHigh"), size("MemoryMax")
	if lw := config.Default().Voices.Sessions.LowWater; hard-high != lw {
		t.Errorf("unit: MemoryMax %d MiB − MemoryHigh %d MiB = %d MiB, want voices.sessions.low_water's default %d MiB",
			hard>>20, high>>20, (hard-high)>>20, lw>>20)
	}
	if high < 2*soakPeakBudget {
		t.Errorf("unit: MemoryHigh %d MiB leaves too little above the %d MiB peak budget", high>>20, soakPeakBudget>>20)
	}
	want := "MALLOC_ARENA_MAX=" + strconv.Itoa(memory.ArenaMax)
	if !slices.Contains(kv["Environment"], want) {
		t.Errorf("unit: %s missing (have %q)", want, kv["Environment"])
	}
}

// TestUnitLetsTheClockBeRead: the groups' clock check reads the clock's
// NTP state with adjtimex, which ProtectClock=yes and a denied @clock
// refuse even read-only (EPERM, systemd issue 26413). The unit allows
// adjtimex after its deny list and keeps the clock from being set by
// holding no capabilities (no CAP_SYS_TIME).
func TestUnitLetsTheClockBeRead(t *testing.T) {
	kv := readUnit(t)
	if v := kv["ProtectClock"]; len(v) != 0 {
		t.Errorf("unit: ProtectClock=%s makes the clock check fail with EPERM", v)
	}
	filters := kv["SystemCallFilter"]
	deny := slices.IndexFunc(filters, func(f string) bool { return strings.HasPrefix(f, "~") })
	allow := slices.Index(filters, "adjtimex")
	if deny < 0 || allow < deny {
		t.Errorf("unit: SystemCallFilter=%q: want SystemCallFilter=adjtimex after the ~ deny list", filters)
	}
	if v := kv["CapabilityBoundingSet"]; len(v) != 1 || v[0] != "" {
		t.Errorf("unit: CapabilityBoundingSet=%q, want empty (no CAP_SYS_TIME: the clock cannot be set)", v)
	}
	if v := kv["AmbientCapabilities"]; len(v) != 1 || v[0] != "" {
		t.Errorf("unit: AmbientCapabilities=%q, want empty", v)
	}
}
