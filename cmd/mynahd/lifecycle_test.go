package main

import (
	"bytes"
	"encoding/json"
	"github.com/mynah-tts/mynah/systemd/systemdtest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// buildMynahd builds the daemon binary for tests that run it as systemd
// would: as its own process, with signals and a notify socket.
func buildMynahd(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mynahd")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goBin, "build", "-ldflags", "-X github.com/mynah-tts/mynah/cmd/internal/version.stamped="+testVersion,
		"-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// testVersion is stamped into the binary as make build stamps git describe.
const testVersion = "v0.0.0-test"

// TestLifecycleUnderSystemd runs the mynahd binary the way systemd does:
// READY=1 once the voice is loaded and the broker connected, WATCHDOG=1
// pings while it works, and on SIGTERM STOPPING=1, "offline" on the status
// topic and exit status 0.
func TestLifecycleUnderSystemd(t *testing.T) {
	bin := buildMynahd(t)
	broker := mqtttest.StartMosquitto(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "mynahd.yaml")
	wyomingAddr := freeAddr(t)
	os.WriteFile(conf, []byte("node: hall\nmqtt:\n  broker: "+broker.URL()+"\nvoices:\n  dir: "+dir+"\nonnx:\n  optimized_dir: "+dir+"/optimized\ncache:\n  file: "+dir+"/cache.db\naudio:\n  device: \"null\"\nlog:\n  format: journal\nwyoming:\n  listen: "+wyomingAddr+"\n"), 0o600)
	sd := systemdtest.New(t)

	status := mqtttest.Subscribe(t, broker.URL(), daemon.StatusTopic("hall"))
	cmd := exec.Command(bin, "-config", conf)
	cmd.Env = append(os.Environ(), "WATCHDOG_USEC=400000")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })

	sd.Expect("READY=1")
	sd.Expect("WATCHDOG=1")
	sd.Expect("WATCHDOG=1")

	// READY means the Wyoming port is served too: Home Assistant's
	// describe is answered.
	wc := dialWyoming(t, wyomingAddr)
	wc.send("describe", map[string]any{})
	if e := wc.next(); e.Type != "info" {
		t.Fatalf("describe answered with %q", e.Type)
	}

	// Home Assistant's device page shows the version the build stamped.
	select {
	case m := <-mqtttest.Subscribe(t, broker.URL(), "homeassistant/device/hall/config"):
		var doc struct {
			Dev    struct{ SW string } `json:"dev"`
			Origin struct{ SW string } `json:"o"`
		}
		if err := json.Unmarshal(m.Payload, &doc); err != nil || doc.Dev.SW != testVersion || doc.Origin.SW != testVersion {
			t.Errorf("discovery sw %q / %q (%v), want %s", doc.Dev.SW, doc.Origin.SW, err, testVersion)
		}
	case <-time.After(wait):
		t.Fatal("no retained discovery")
	}
	if out, err := exec.Command(bin, "-version").Output(); err != nil || string(out) != "mynahd "+testVersion+"\n" {
		t.Errorf("mynahd -version: %q, %v", out, err)
	}

	ev := mqtttest.Subscribe(t, broker.URL(), "mynah/hall/event")
	mqtttest.Publish(t, broker.URL(), "mynah/hall/say", []byte(`{"id":"life","text":"Still here."}`), false)
	for finished := false; !finished; {
		select {
		case m := <-ev:
			var e daemon.Event
			finished = json.Unmarshal(m.Payload, &e) == nil && e.ID == "life" && e.State == "finished"
		case <-time.After(wait):
			t.Fatalf("no finished event; mynahd said:\n%s", stderr.String())
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sd.Expect("STOPPING=1")
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("mynahd exited with %v after SIGTERM:\n%s", err, stderr.String())
		}
	case <-time.After(wait):
		t.Fatal("mynahd did not exit after SIGTERM")
	}
	// online while it ran, offline after it stopped.
	var last string
	for drained := false; !drained; {
		select {
		case m := <-status:
			last = string(m.Payload)
		case <-time.After(quietFor()):
			drained = true
		}
	}
	if last != "offline" {
		t.Fatalf("status after SIGTERM is %q, want offline", last)
	}
	if strings.Contains(stderr.String(), "level=ERROR") {
		t.Fatalf("errors logged:\n%s", stderr.String())
	}
}
