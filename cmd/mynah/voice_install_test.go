package main

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/catalog"
	"github.com/mynah-tts/mynah/audio/voice/catalog/catalogtest"
	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/quant/ort"
)

// voiceEnv serves the standard collection and returns the flags that
// point mynah voice at it and at a fresh voices directory. No config
// file or $MYNAH_VOICES of the machine leaks in.
func voiceEnv(t *testing.T) (s *catalogtest.Server, dir string, flags []string) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "mynahd.yaml")
	// The optimized copies in a directory of the test's, never the
	// machine's.
	yaml := "node: test\nonnx:\n  optimized_dir: " + filepath.Join(t.TempDir(), "optimized") + "\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MYNAH_CONFIG", cfg)
	t.Setenv(envVoices, "")
	s = catalogtest.New(t, catalogtest.Standard...)
	dir = t.TempDir()
	return s, dir, []string{"--voices", dir, "--catalog-url", s.CatalogURL, "--download-url", s.BaseURL}
}

func install(t *testing.T, flags []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return mynah(t, append(append([]string{"voice", "install"}, args...), flags...)...)
}

// checkVoice checks that dir/key is a whole voice that the engine's
// check accepts.
func checkVoice(t *testing.T, dir, key string) {
	t.Helper()
	if _, err := voice.CheckPiperFiles(filepath.Join(dir, key, key+".onnx")); err != nil {
		t.Errorf("installed voice: %v", err)
	}
	if rec := catalog.ReadRecord(filepath.Join(dir, key)); rec == nil || len(rec.Files[key+".onnx"].SHA256) != 64 {
		t.Errorf("install record %+v", rec)
	}
}

func checkNothingInstalled(t *testing.T, dir, key string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, key)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s installed", key)
	}
}

func TestVoiceInstallByKeyAliasLanguage(t *testing.T) {
	for _, tt := range []struct {
		req, quality, key, said string
	}{
		{"en_US-lessac-medium", "", "en_US-lessac-medium", "installing en_US-lessac-medium"},
		{"de-thorsten-medium", "", "de_DE-thorsten-medium", "de-thorsten-medium is de_DE-thorsten-medium"},
		{"en_US", "", "en_US-lessac-medium", "en_US: choosing en_US-lessac-medium (medium, 1 speaker,"},
		{"en_US", "high", "en_US-lessac-high", "en_US: choosing en_US-lessac-high (high,"},
		{"lessac", "", "en_US-lessac-medium", "lessac: choosing en_US-lessac-medium"},
	} {
		t.Run(tt.req+tt.quality, func(t *testing.T) {
			_, dir, flags := voiceEnv(t)
			if tt.quality != "" {
				flags = append(flags, "--quality", tt.quality)
			}
			out, errOut, err := install(t, flags, tt.req)
			if err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			if !strings.Contains(errOut, tt.said) {
				t.Errorf("stderr %q lacks %q", errOut, tt.said)
			}
			if !strings.HasPrefix(out, "installed "+tt.key+" in "+filepath.Join(dir, tt.key)) {
				t.Errorf("stdout %q", out)
			}
			checkVoice(t, dir, tt.key)
			// Plain progress lines: not a terminal.
			if !strings.Contains(errOut, tt.key+".onnx: ") || strings.Contains(errOut, "\r") {
				t.Errorf("progress lines: %q", errOut)
			}
			out, _, err = install(t, flags, tt.req)
			if err != nil || !strings.Contains(out, "already installed") {
				t.Errorf("second install: %q %v", out, err)
			}
		})
	}
}

func TestVoiceInstallURL(t *testing.T) {
	s, dir, flags := voiceEnv(t)
	key := "en_GB-alan-medium"
	out, errOut, err := install(t, flags, s.URL+catalogtest.ModelURLPath(key))
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.HasPrefix(out, "installed "+key) {
		t.Errorf("stdout %q", out)
	}
	checkVoice(t, dir, key)
}

func TestVoiceInstallNotFound(t *testing.T) {
	_, dir, flags := voiceEnv(t)
	_, _, err := install(t, flags, "en_US-lesac-medium")
	if !errors.Is(err, catalog.ErrNotFound) || !strings.Contains(err.Error(), "nearest: en_US-lessac-medium") {
		t.Errorf("err = %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			t.Errorf("%s left in the voices directory", e.Name())
		}
	}
}

func TestVoiceInstallResumesAfterDrop(t *testing.T) {
	s, dir, flags := voiceEnv(t)
	key := "en_US-lessac-medium"
	model, _ := catalogtest.DemoFiles(t)
	ranges := s.DropFirst(t, key)
	if _, errOut, err := install(t, flags, key); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	checkVoice(t, dir, key)
	if r := ranges(); len(r) != 2 || r[1] != "bytes="+strconv.Itoa(len(model)/2)+"-" {
		t.Errorf("ranges %q", r)
	}
}

func TestVoiceInstallWrongMD5(t *testing.T) {
	s, dir, flags := voiceEnv(t)
	key := "en_US-lessac-medium"
	model, _ := catalogtest.DemoFiles(t)
	s.Intercept = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != catalogtest.ModelURLPath(key) {
			return false
		}
		bad := append([]byte(nil), model...)
		bad[100] ^= 1
		w.Write(bad)
		return true
	}
	_, _, err := install(t, flags, key)
	if !errors.Is(err, catalog.ErrChecksum) || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("err = %v, want ErrChecksum", err)
	}
	checkNothingInstalled(t, dir, key)
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && (strings.HasSuffix(p, ".part") || strings.HasSuffix(p, ".onnx")) {
			t.Errorf("%s left behind", p)
		}
		return nil
	})
}

func TestVoiceInstall404(t *testing.T) {
	s, dir, flags := voiceEnv(t)
	key := "en_US-lessac-medium"
	os.Remove(filepath.Join(s.Root, filepath.FromSlash(catalogtest.FilePath(key, key+".onnx"))))
	_, _, err := install(t, flags, key)
	if !errors.Is(err, catalog.ErrHTTPStatus) || !strings.Contains(err.Error(), "404") {
		t.Fatalf("err = %v, want a 404", err)
	}
	checkNothingInstalled(t, dir, key)
}

// A slow server: progress lines appear while it trickles; when it stops
// sending, --timeout gives up with a clear error.
func TestVoiceInstallSlowServer(t *testing.T) {
	defer func(e time.Duration) { progressEvery = e }(progressEvery)
	progressEvery = time.Nanosecond
	s, dir, flags := voiceEnv(t)
	key := "en_US-lessac-medium"
	model, _ := catalogtest.DemoFiles(t)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	s.Intercept = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != catalogtest.ModelURLPath(key) {
			return false
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(model)))
		for i := range 4 {
			w.Write(model[i*1000 : (i+1)*1000])
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
		}
		select {
		case <-stop:
		case <-r.Context().Done():
		}
		return true
	}
	_, errOut, err := install(t, append(flags, "--timeout", "300ms"), key)
	if !errors.Is(err, catalog.ErrStalled) || !strings.Contains(err.Error(), "nothing received") {
		t.Fatalf("err = %v, want ErrStalled", err)
	}
	if n := strings.Count(errOut, key+".onnx: "); n < 3 {
		t.Errorf("%d progress lines:\n%s", n, errOut)
	}
	if !strings.Contains(errOut, "4.0 kB of ") {
		t.Errorf("progress never reached 4.0 kB:\n%s", errOut)
	}
	checkNothingInstalled(t, dir, key)
}

func TestVoiceInstallCatalogNotJSON(t *testing.T) {
	s, _, flags := voiceEnv(t)
	s.Intercept = func(w http.ResponseWriter, r *http.Request) bool {
		w.Write([]byte("<!doctype html><title>captive portal</title>"))
		return true
	}
	if _, _, err := install(t, flags, "en_US"); !errors.Is(err, catalog.ErrBadCatalog) {
		t.Errorf("err = %v, want ErrBadCatalog", err)
	}
}

func TestVoiceInstallConcurrent(t *testing.T) {
	s, dir, flags := voiceEnv(t)
	key := "en_US-lessac-medium"
	gate := make(chan struct{})
	s.Intercept = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == catalogtest.ModelURLPath(key) {
			<-gate
		}
		return false
	}
	outs := make([]string, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() { outs[i], _, errs[i] = install(t, flags, key) })
	}
	time.Sleep(100 * time.Millisecond)
	close(gate)
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
	}
	joined := outs[0] + outs[1]
	if strings.Count(joined, "installed "+key+" in") != 1 || strings.Count(joined, "already installed") != 1 {
		t.Errorf("outputs %q", outs)
	}
	if n := s.Gets(catalogtest.ModelURLPath(key)); n != 1 {
		t.Errorf("%d downloads, want 1", n)
	}
	checkVoice(t, dir, key)
}

func TestVoiceInstallFileMirror(t *testing.T) {
	s, dir, _ := voiceEnv(t)
	s.Close() // offline
	flags := []string{"--voices", dir, "--catalog-url", "file://" + s.Root + "/voices.json", "--download-url", "file://" + s.Root + "/"}
	if _, errOut, err := install(t, flags, "en_GB"); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	checkVoice(t, dir, "en_GB-alan-medium")
	// A direct file URL too.
	key := "de_DE-thorsten-medium"
	if _, errOut, err := install(t, flags, "file://"+filepath.Join(s.Root, filepath.FromSlash(catalogtest.FilePath(key, key+".onnx")))); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	checkVoice(t, dir, key)
}

// $MYNAH_VOICES and the config file's voices section are the defaults.
func TestVoiceInstallDefaultsFromConfig(t *testing.T) {
	s, _, _ := voiceEnv(t)
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "mynahd.yaml")
	yaml := "voices:\n  dir: " + dir + "\n  catalog_url: " + s.CatalogURL + "\n  download_url: " + s.BaseURL + "\n" +
		"onnx:\n  optimized_dir: " + filepath.Join(t.TempDir(), "optimized") + "\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := mynah(t, "voice", "install", "--config", cfg, "en_GB-alan-medium"); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	checkVoice(t, dir, "en_GB-alan-medium")
	other := t.TempDir()
	t.Setenv(envVoices, other)
	if _, errOut, err := mynah(t, "voice", "install", "--config", cfg, "en_GB-alan-medium"); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	checkVoice(t, other, "en_GB-alan-medium")
}

func TestVoiceListAndRemove(t *testing.T) {
	_, dir, flags := voiceEnv(t)
	if _, errOut, err := install(t, flags, "en_US-lessac-medium"); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	out, _, err := mynah(t, append([]string{"voice", "list"}, flags...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "en_US-lessac-medium") || strings.Contains(out, ".mynah") || strings.Contains(out, "AVAILABLE") {
		t.Errorf("list:\n%s", out)
	}
	out, _, err = mynah(t, append([]string{"voice", "list", "--available", "--language", "en_US"}, flags...)...)
	if err != nil {
		t.Fatal(err)
	}
	var avail []string
	for _, line := range strings.Split(out[strings.Index(out, "AVAILABLE"):], "\n")[2:] {
		if line != "" {
			avail = append(avail, line)
		}
	}
	if len(avail) != 4 || strings.Contains(out, "en_GB") {
		t.Errorf("available en_US voices:\n%s", out)
	}
	for _, line := range avail {
		installed := strings.HasSuffix(strings.TrimSpace(line), "yes")
		if installed != strings.HasPrefix(line, "en_US-lessac-medium ") {
			t.Errorf("installed mark wrong: %q", line)
		}
	}
	if _, _, err := mynah(t, "voice", "remove", "en_US-lessac-medium", "--voices", dir); err != nil {
		t.Fatal(err)
	}
	checkNothingInstalled(t, dir, "en_US-lessac-medium")
	if _, _, err := mynah(t, "voice", "remove", "en_US-lessac-medium", "--voices", dir); !errors.Is(err, catalog.ErrNotInstalled) {
		t.Errorf("second remove: %v", err)
	}
	if _, _, err := mynah(t, "voice", "remove", "../etc", "--voices", dir); !errors.Is(err, catalog.ErrInvalidVoice) {
		t.Errorf("remove ../etc: %v", err)
	}
}

func TestVoiceInstallUsage(t *testing.T) {
	_, _, flags := voiceEnv(t)
	for _, args := range [][]string{
		{"voice", "install"},
		{"voice", "install", "a", "b"},
		{"voice", "install", "a", "--timeout", "0s"},
		{"voice", "remove"},
		{"voice", "list", "extra"},
	} {
		if _, _, err := mynah(t, append(args, flags...)...); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

// An install prepares the voice: the optimized copy mynahd would load,
// built for mynahd's options into its onnx.optimized_dir (here the flag),
// so that its first load is the copy; --no-prepare leaves it.
func TestVoiceInstallPrepares(t *testing.T) {
	_, dir, flags := voiceEnv(t)
	optimized := filepath.Join(t.TempDir(), "optimized")
	_, errOut, err := install(t, append(flags, "--optimized-dir", optimized), "en_US-lessac-medium")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "prepared en_US-lessac-medium in ") {
		t.Errorf("stderr %q says nothing of preparing", errOut)
	}
	def := config.Default().ONNX
	p, err := voice.LoadPiper(enginetest.OpenRuntime(t), filepath.Join(dir, "en_US-lessac-medium"), &voice.PiperOptions{
		Session:       &ort.SessionOptions{Provider: ort.Provider(def.Provider), IntraOpThreads: def.Threads, CPUArena: def.Arena},
		KeepConv1D:    !def.LiftConv1D,
		OptimizedDir:  optimized,
		OptimizeLater: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !p.Info().Optimized {
		t.Error("the first load after the install did not find the prepared copy")
	}

	_, dir, flags = voiceEnv(t)
	skipped := filepath.Join(t.TempDir(), "skipped")
	if _, errOut, err := install(t, append(flags, "--optimized-dir", skipped, "--no-prepare"), "en_US-lessac-medium"); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if entries, _ := os.ReadDir(skipped); len(entries) != 0 {
		t.Errorf("--no-prepare built %d files", len(entries))
	}
	checkVoice(t, dir, "en_US-lessac-medium")
}
