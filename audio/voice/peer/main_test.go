package peer_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/peer"
)

// workerEnv makes the test binary a worker instead of running tests: the
// benchmark's mynah side (role mynah) and the fakes the Worker tests talk
// to, and the install's prepare (role mynah-prepare). Re-executing the test binary keeps the mynah worker in the same
// build as the benchmark, with nothing to install.
const workerEnv = "MYNAH_PEER_WORKER"

func TestMain(m *testing.M) {
	role := os.Getenv(workerEnv)
	if role == "" {
		os.Exit(m.Run())
	}
	var err error
	switch role {
	case "mynah":
		err = mynahWorker()
	case "mynah-prepare":
		err = prepareWorker()
	case "echo":
		err = echoWorker()
	case "fail-load":
		err = peer.WriteLine(os.Stdout, peer.Ready{Error: "no model here"})
		os.Exit(1)
	case "silent":
		select {} // never ready: the start timeout must kill it
	default:
		err = fmt.Errorf("unknown %s role %q", workerEnv, role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "peer worker %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// echoWorker answers each sentence with one sample per byte of its text,
// and fails the sentence "fail".
func echoWorker() error {
	if err := peer.WriteLine(os.Stdout, peer.Ready{Ready: true, Runtime: "echo", LoadMS: 1.5, SampleRate: 16000, BaseRSSKB: 100}); err != nil {
		return err
	}
	return peer.Serve(os.Stdin, os.Stdout, func(text string) (int, error) {
		if text == "fail" {
			return 0, fmt.Errorf("cannot say %q", text)
		}
		return len(text), nil
	})
}
