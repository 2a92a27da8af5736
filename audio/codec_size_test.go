package audio

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// plainZstd is the size of the PCM bytes compressed with the codec's zstd
// encoder: the baseline the codec must beat.
func plainZstd(tb testing.TB, p PCM) int {
	enc, _, err := phraseCoders()
	if err != nil {
		tb.Fatal(err)
	}
	return len(enc.EncodeAll(AppendS16LE(nil, p.Samples), nil))
}

// flacSizes reads testdata/codec/speech.flac-size.txt: "name bytes" lines.
func flacSizes(tb testing.TB) map[string]int {
	tb.Helper()
	f, err := os.Open(filepath.Join("testdata", "codec", "speech.flac-size.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	m := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, v, ok := strings.Cut(line, " ")
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if !ok || err != nil {
			tb.Fatalf("speech.flac-size.txt: bad line %q", line)
		}
		m[name] = n
	}
	if m["default"] == 0 || m["C8"] == 0 || m["C5"] == 0 {
		tb.Fatalf("speech.flac-size.txt lacks default, C8 or C5: %v", m)
	}
	return m
}

// The size goals of the issue, against the FLAC sizes recorded with the
// speech file: smaller than plain zstd, and at most 2% over FLAC's best.
func TestPhraseCodecSize(t *testing.T) {
	p := speechPCM(t)
	rec, err := EncodePhrase(p)
	if err != nil {
		t.Fatal(err)
	}
	flac := flacSizes(t)
	z := plainZstd(t, p)
	t.Logf("speech: %d bytes; plain zstd %d (%.3f); FLAC default %d (%.3f), -8 %d, -5 %d (%.3f)",
		len(rec), z, float64(len(rec))/float64(z), flac["default"], float64(len(rec))/float64(flac["default"]),
		flac["C8"], flac["C5"], float64(len(rec))/float64(flac["C5"]))
	if len(rec) >= z {
		t.Errorf("speech: %d bytes, not smaller than plain zstd's %d", len(rec), z)
	}
	if best := min(flac["default"], flac["C8"]); float64(len(rec)) > 1.02*float64(best) {
		t.Errorf("speech: %d bytes, more than 2%% over FLAC's %d", len(rec), best)
	}
	like := speechLike(22050, 20, 1)
	rec, err = EncodePhrase(like)
	if err != nil {
		t.Fatal(err)
	}
	z = plainZstd(t, like)
	t.Logf("speech-like: %d bytes; plain zstd %d (%.3f)", len(rec), z, float64(len(rec))/float64(z))
	if len(rec) >= z {
		t.Errorf("speech-like: %d bytes, not smaller than plain zstd's %d", len(rec), z)
	}
}

// soxFLAC returns the size of sox's FLAC encoding of p at a compression
// level ("" for sox's default).
func soxFLAC(tb testing.TB, p PCM, level string) int {
	tb.Helper()
	sox, err := exec.LookPath("sox")
	if err != nil {
		tb.Fatal("sox not found: install sox (scripts/setup.sh) to compare the phrase codec with FLAC")
	}
	dir := tb.TempDir()
	in, out := filepath.Join(dir, "in.wav"), filepath.Join(dir, "out.flac")
	if err := os.WriteFile(in, EncodeWAV(p), 0o644); err != nil {
		tb.Fatal(err)
	}
	args := []string{in}
	if level != "" {
		args = append(args, "-C", level)
	}
	if b, err := exec.Command(sox, append(args, out)...).CombinedOutput(); err != nil {
		tb.Fatalf("sox: %v\n%s", err, b)
	}
	fi, err := os.Stat(out)
	if err != nil {
		tb.Fatal(err)
	}
	return int(fi.Size())
}

// The FLAC comparison measured live with sox, on the demo voice and on the
// more natural speech-like signal.
func TestPhraseCodecVsSoxFLAC(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    PCM
	}{{"speech", speechPCM(t)}, {"speech-like", speechLike(22050, 20, 1)}} {
		rec, err := EncodePhrase(tc.p)
		if err != nil {
			t.Fatal(err)
		}
		def, c8, c5 := soxFLAC(t, tc.p, ""), soxFLAC(t, tc.p, "8"), soxFLAC(t, tc.p, "5")
		t.Logf("%s: %d bytes; FLAC default %d (%.3f), -8 %d (%.3f), -5 %d (%.3f)", tc.name, len(rec),
			def, float64(len(rec))/float64(def), c8, float64(len(rec))/float64(c8), c5, float64(len(rec))/float64(c5))
		if best := min(def, c8); float64(len(rec)) > 1.02*float64(best) {
			t.Errorf("%s: %d bytes, more than 2%% over FLAC's %d", tc.name, len(rec), best)
		}
	}
}
