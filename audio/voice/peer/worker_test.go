package peer_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/voice/peer"
)

func TestStatusKB(t *testing.T) {
	status := "Name:\tnode\nVmPeak:\t 1254392 kB\nVmHWM:\t   94208 kB\nVmRSS:\t   90112 kB\nThreads:\t7\nBad:\t12 MB\nNeg:\t-3 kB\nHuge:\t99999999999999999999 kB\n"
	for _, tc := range []struct {
		field string
		want  int64
		err   string
	}{
		{"VmHWM", 94208, ""},
		{"VmRSS", 90112, ""},
		{"VmPeak", 1254392, ""},
		{"Vm", 0, "no Vm field"},
		{"Threads", 0, `"7" is not a size in kB`},
		{"Bad", 0, `"12 MB" is not a size in kB`},
		{"Neg", 0, "not a size"},
		{"Huge", 0, "not a size"},
		{"Missing", 0, "no Missing field"},
	} {
		got, err := peer.StatusKB([]byte(status), tc.field)
		if !matches(err, tc.err) || got != tc.want {
			t.Errorf("StatusKB(%s) = %d, %v; want %d, error with %q", tc.field, got, err, tc.want, tc.err)
		}
	}
	if _, err := peer.StatusKB(nil, "VmHWM"); err == nil {
		t.Error("empty status: no error")
	}
}

// fakeWorker is this test binary as a worker of the given role
// (TestMain).
func fakeWorker(t *testing.T, role string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), workerEnv+"="+role)
	return cmd
}

func TestWorker(t *testing.T) {
	w, err := peer.StartWorker("echo", fakeWorker(t, "echo"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (peer.Ready{Ready: true, Runtime: "echo", LoadMS: 1.5, SampleRate: 16000, BaseRSSKB: 100}); w.Ready != want {
		t.Errorf("ready %+v, want %+v", w.Ready, want)
	}
	if w.StartToReady <= 0 {
		t.Errorf("start to ready %v", w.StartToReady)
	}
	for _, text := range []string{"Hello there.", "Grüße."} {
		s, err := w.Say(text)
		if err != nil || s.Samples != len(text) || s.MS < 0 {
			t.Errorf("Say(%q) = %+v, %v; want %d samples", text, s, err, len(text))
		}
	}
	if _, err := w.Say("fail"); err == nil || !strings.Contains(err.Error(), `cannot say "fail"`) {
		t.Errorf("Say(fail): %v, want the worker's error", err)
	}
	if s, err := w.Say("still there?"); err != nil || s.Samples != 12 {
		t.Errorf("after a failed sentence: %+v, %v", s, err)
	}
	if peak, err := w.PeakRSS(); err != nil || peak <= 0 {
		t.Errorf("PeakRSS = %d, %v", peak, err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestWorkerFailedLoad(t *testing.T) {
	_, err := peer.StartWorker("broken", fakeWorker(t, "fail-load"), nil)
	if err == nil || !strings.Contains(err.Error(), "start broken: worker failed to load: no model here") {
		t.Errorf("StartWorker: %v, want the worker's load error", err)
	}
}

func TestWorkerNeverReady(t *testing.T) {
	_, err := peer.StartWorker("silent", fakeWorker(t, "silent"), &peer.WorkerOptions{ReadyTimeout: 100 * time.Millisecond})
	if !errors.Is(err, peer.ErrTimeout) {
		t.Errorf("StartWorker: %v, want ErrTimeout", err)
	}
}

func TestWorkerExitsEarly(t *testing.T) {
	cmd := exec.Command("sh", "-c", "echo 'sherpa: cannot open model.onnx' >&2; exit 3")
	_, err := peer.StartWorker("gone", cmd, nil)
	if err == nil || !strings.Contains(err.Error(), "worker exited") || !strings.Contains(err.Error(), "cannot open model.onnx") {
		t.Errorf("StartWorker: %v, want the exit and its stderr", err)
	}
}
