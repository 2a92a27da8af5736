package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant/ort"
)

// The e2e tests' waits (wait) are hang detectors, not speed
// requirements: 30 s where a demo-voice sentence takes what it takes on
// the CI machine, longer by the ratio on a slower CPU (qemu-aarch64, a
// Raspberry Pi), measured once before the tests run, so that a slow
// board gets the same margin, not a guess.

// baseWait is wait on a machine at least as fast as paceReference.
const baseWait = 30 * time.Second

// paceReference is one demo-voice sentence ("The washing machine has
// finished.", one thread) on the 2-core CI machine: 2–3 ms measured (2.1
// with a full test run beside it), taken well above so that native runs,
// busy or not, keep baseWait.
const paceReference = 5 * time.Millisecond

// paceSentences is how many sentences the measure takes the median of.
const paceSentences = 5

// measureWait synthesizes a few demo-voice sentences and returns the wait
// that pace gives, and the median sentence time. Any failure (no ONNX
// Runtime: the tests will say so) leaves baseWait.
func measureWait() (time.Duration, time.Duration, error) {
	dir, err := os.MkdirTemp("", "mynahd-pace-")
	if err != nil {
		return baseWait, 0, err
	}
	defer os.RemoveAll(dir)
	if _, err := demo.Write(dir, nil); err != nil {
		return baseWait, 0, err
	}
	rt, err := ort.Open(nil)
	if err != nil {
		return baseWait, 0, err
	}
	defer rt.Close()
	p, err := voice.LoadPiper(rt, filepath.Join(dir), &voice.PiperOptions{Session: &ort.SessionOptions{IntraOpThreads: 1}})
	if err != nil {
		return baseWait, 0, err
	}
	defer p.Close()
	var took []time.Duration
	for range paceSentences + 1 { // the first warms up
		start := time.Now()
		if _, _, err := p.SynthesizeSentence("The washing machine has finished.", voice.Params{}); err != nil {
			return baseWait, 0, err
		}
		took = append(took, time.Since(start))
	}
	took = took[1:]
	slices.Sort(took)
	median := took[len(took)/2]
	return paceWait(median), median, nil
}

// paceWait is baseWait scaled by how much slower than paceReference a
// sentence took, never less.
func paceWait(sentence time.Duration) time.Duration {
	if sentence <= paceReference {
		return baseWait
	}
	return time.Duration(float64(baseWait) * float64(sentence) / float64(paceReference))
}

// setWait sets wait from the measured pace and says what it used.
func setWait() {
	w, sentence, err := measureWait()
	wait = w
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e waits: %v (pace not measured: %v)\n", wait, err)
		return
	}
	if wait != baseWait || os.Getenv("MYNAH_EMULATED") != "" {
		fmt.Fprintf(os.Stderr, "e2e waits: %v (a demo-voice sentence took %v here, %v on the reference machine)\n",
			wait.Round(time.Second), sentence.Round(100*time.Microsecond), paceReference)
	}
}

// quietFor is how long a test waits to see that nothing more comes (a
// second answer, a last status): 2 s here, scaled like wait, so that on a
// slow CPU what would come late is still seen.
func quietFor() time.Duration { return wait / 15 }
