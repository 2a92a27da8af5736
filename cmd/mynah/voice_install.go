package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/audio/voice/catalog"
	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/cmd/internal/memory"
	"github.com/mynah-tts/mynah/quant"
	"github.com/mynah-tts/mynah/quant/cpuclass"
	"github.com/mynah-tts/mynah/quant/ort"
)

// envVoices overrides voices.dir for mynah voice install, list and remove.
const envVoices = "MYNAH_VOICES"

// progressEvery spaces progress lines when standard error is not a
// terminal (a terminal's one line is redrawn every terminalEvery).
var (
	progressEvery = 2 * time.Second
	terminalEvery = 200 * time.Millisecond
)

// sourceFlags are the flags install, list and remove share: where the
// voices live and where the catalog comes from.
type sourceFlags struct {
	voices, catalogURL, downloadURL, configFile string
	refresh                                     bool
}

func (f *sourceFlags) register(fs *flag.FlagSet, withURLs bool) {
	fs.StringVar(&f.voices, "voices", "", "the voices directory (default $"+envVoices+", else voices.dir of mynahd's config, "+config.Default().Voices.Dir+")")
	fs.StringVar(&f.configFile, "config", "", "mynahd's config file, for voices.dir and the catalog URLs (default $MYNAH_CONFIG, else "+config.DefaultPath+" if present)")
	if withURLs {
		fs.StringVar(&f.catalogURL, "catalog-url", "", "the voice catalog, a voices.json: http(s):// or file:/// (default voices.catalog_url,\nthe Piper voices collection)")
		fs.StringVar(&f.downloadURL, "download-url", "", "the base URL of the voice files: the collection, a mirror, or file:///dir (default\nvoices.download_url)")
		fs.BoolVar(&f.refresh, "refresh", false, "fetch the catalog again even when the cached copy is recent")
	}
}

// client opens the catalog client the flags describe.
func (f *sourceFlags) client(o *catalog.Options) (*catalog.Client, error) {
	cfg, _, err := config.LoadFromFlag(f.configFile)
	if err != nil {
		return nil, err
	}
	dir := cmp(f.voices, os.Getenv(envVoices), cfg.Voices.Dir)
	o.CatalogURL = cmp(f.catalogURL, cfg.Voices.CatalogURL)
	o.DownloadURL = cmp(f.downloadURL, cfg.Voices.DownloadURL)
	return catalog.New(dir, o)
}

// cmp is the first of values that is not empty.
func cmp(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

const voiceInstallUsage = `Usage: mynah voice install NAME|ALIAS|LANGUAGE|URL [flags]

Installs a Piper voice into the voices directory, where mynahd (which
watches it) offers it at once. NAME is a catalog key (en_US-lessac-medium),
an alias the catalog lists, or a voice name (lessac); LANGUAGE (en_US, en)
picks the language's usual voice (lessac for en_US) in --quality, else
the catalog's best voice of --quality for it, and says which and why
before downloading. URL is a direct http(s):// or file:/// URL of a NAME.onnx,
whose NAME.onnx.json lies beside it.

Both files are downloaded (an interrupted download resumes), checked
against the catalog's size and md5, validated as a Piper voice, and only
then moved into DIR/NAME in one step. Nothing else is ever fetched.
The voice is then prepared: ONNX Runtime's optimized copy of it is built
for this CPU into mynahd's onnx.optimized_dir, so that mynahd's first
load of it is as fast as every later one (--no-prepare leaves that to
mynahd, which builds it in the background).

--quantize MODE then makes a smaller variant of the voice (of one
installed before too), as mynah quantize --voice DIR --mode MODE does:
written beside it only if the quality gate passes it, and recorded where
voices.precision finds it. A variant the gate refuses, or a MODE with
nothing to rewrite in this voice, is said, and the voice stays installed
as it is.

Flags:
`

func runVoiceInstall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("voice install", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var src sourceFlags
	src.register(fs, true)
	quality := fs.String("quality", catalog.DefaultQuality, "for a LANGUAGE or voice name: x_low, low, medium or high (the nearest is taken)")
	timeout := fs.Duration("timeout", catalog.DefaultStallTimeout, "give up when the server sends nothing for this long (a slow download is fine)")
	optimizedDir := fs.String("optimized-dir", "", "where to build the voice's optimized copy (default onnx.optimized_dir of mynahd's config)")
	noPrepare := fs.Bool("no-prepare", false, "do not build the optimized copy (mynahd builds it in the background)")
	quantize := fs.String("quantize", "", "then make a variant of the voice: fp16-store, int8, nbits or auto, kept only if\nthe quality gate passes it (as mynah quantize --voice DIR --mode MODE; default none)")
	fs.Usage = func() {
		fmt.Fprint(stderr, voiceInstallUsage)
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("voice install needs one NAME, ALIAS, LANGUAGE or URL")
	}
	if *timeout <= 0 {
		return usageError("--timeout must be positive")
	}
	if *quantize != "" {
		if _, err := quant.ParseMode(*quantize); err != nil {
			return usageError("--quantize: %v", err)
		}
	}
	req := pos[0]
	bar := newProgressBar(stderr)
	c, err := src.client(&catalog.Options{
		StallTimeout: *timeout,
		Progress:     bar.update,
		// The bar decides what to draw; the catalog reports often.
		ProgressEvery: min(terminalEvery, progressEvery),
		Check:         checkStagedVoice,
		Logger:        newLogger(stderr, false),
	})
	if err != nil {
		return fmt.Errorf("voice install: %w", err)
	}
	var res *catalog.Result
	if isURL(req) {
		fmt.Fprintf(stderr, "installing %s from %s\n", strings.TrimSuffix(filepath.Base(req), ".onnx"), req)
		res, err = c.InstallURL(ctx, req)
	} else {
		var cat *catalog.Catalog
		var info catalog.CatalogInfo
		cat, info, err = c.Catalog(ctx, src.refresh)
		if err != nil {
			return fmt.Errorf("voice install: %w", err)
		}
		if info.Stale {
			fmt.Fprintf(stderr, "catalog not fetched (%v); using the copy of %s\n", info.FetchErr, info.FetchedAt.Format(time.DateTime))
		}
		var r *catalog.Resolution
		if r, err = cat.Resolve(req, *quality); err != nil {
			return fmt.Errorf("voice install: %w", err)
		}
		v := r.Voice
		switch r.By {
		case catalog.ByLanguage, catalog.ByName:
			fmt.Fprintln(stderr, choiceLine(req, *quality, r))
		case catalog.ByAlias:
			fmt.Fprintf(stderr, "%s is %s\n", req, v.Key)
		}
		fmt.Fprintf(stderr, "installing %s (%s)\n", v.Key, sizeString(v.Size()))
		res, err = c.Install(ctx, v)
	}
	bar.finish()
	if err != nil {
		return fmt.Errorf("voice install: %w", err)
	}
	if res.AlreadyInstalled {
		fmt.Fprintf(stdout, "%s is already installed in %s (mynah voice remove %s to install it again)\n", res.Key, res.Path, res.Key)
	} else {
		model := res.Record.Files[res.Key+".onnx"]
		fmt.Fprintf(stdout, "installed %s in %s (%s, sha256 %s)\n", res.Key, res.Path, sizeString(model.SizeBytes), model.SHA256[:16])
	}
	// Quantized first, prepared then: the copy built is of the variant
	// mynahd will load.
	if *quantize != "" {
		err = quantizeInstalled(res.Key, res.Path, *quantize, stdout, stderr)
	}
	if !*noPrepare && (!res.AlreadyInstalled || *quantize != "") {
		prepareVoice(src.configFile, *optimizedDir, res.Key, res.Path, stderr)
	}
	return err
}

// quantizeInstalled makes the mode variant of the voice installed at
// path, as mynah quantize --voice path --mode mode does, its report and
// the gate's verdict on stdout. Whatever the quantizer decides, the voice
// stays installed: a variant the gate refuses, or a mode with nothing to
// rewrite, is said on stderr and is no failure of the install.
func quantizeInstalled(key, path, mode string, stdout, stderr io.Writer) error {
	fmt.Fprintf(stderr, "quantizing %s (--quantize %s)\n", key, mode)
	err := newQuantizeFlags(mode).variant(path, stdout, stderr)
	var refused *refusedError
	if errors.As(err, &refused) {
		err = refused.verdict // the checks that failed, without quantize's --force
	} else if err != nil && !errors.Is(err, errNothingToRewrite) {
		return fmt.Errorf("voice install: %s is installed, but --quantize %s failed: %w", key, mode, err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s is installed as it is, with no %s variant: %v\n", key, mode, err)
	}
	return nil
}

// prepareVoice builds the optimized copy of the voice installed at path
// (voice.OptimizePiper) as mynahd loads it: the ONNX Runtime, provider,
// threads and lifted convolutions of its config and the precision
// variant its voices.precision picks, into dir or else its
// onnx.optimized_dir. The voice is installed either way: a copy that
// cannot be built is said, and left to mynahd.
func prepareVoice(configFile, dir, key, path string, stderr io.Writer) {
	cfg, _, err := config.LoadFromFlag(configFile)
	if err == nil {
		dir = cmp(dir, cfg.ONNX.OptimizedDir)
	}
	if err != nil || dir == "" {
		return // no config (already said by the install), or no copies kept
	}
	precision, err := mynahdPrecision(cfg, key, path)
	if err != nil {
		fmt.Fprintf(stderr, "%s not prepared (mynahd prepares it in the background at its first use): %v\n", key, err)
		return
	}
	what := key
	if precision != bundle.PrecisionFP32 {
		what += " (" + precision + ")"
	}
	fmt.Fprintf(stderr, "preparing %s for this CPU in %s\n", what, dir)
	start := time.Now()
	err = func() error {
		rt, err := ort.Open(&ort.Options{LibraryPath: cfg.ONNX.Library, Building: memory.SessionBuilding()})
		if err != nil {
			return err
		}
		defer rt.Close()
		// As cmd/mynahd/voices.go sets them: the copy is found by them.
		return voice.OptimizePiper(rt, path, &voice.PiperOptions{
			Session:       &ort.SessionOptions{Provider: ort.Provider(cfg.ONNX.Provider), IntraOpThreads: cfg.ONNX.Threads, CPUArena: cfg.ONNX.Arena},
			KeepConv1D:    !cfg.ONNX.LiftConv1D,
			KeepLeakyRelu: !cfg.ONNX.BlockLeakyRelu,
			OptimizedDir:  dir,
			Precision:     precision,
		})
	}()
	if err != nil {
		fmt.Fprintf(stderr, "%s not prepared (mynahd prepares it in the background at its first use): %v\n", key, err)
		return
	}
	fmt.Fprintf(stderr, "prepared %s in %s\n", what, time.Since(start).Round(time.Millisecond))
}

// mynahdPrecision is the variant of the Piper voice key at path that
// mynahd's config makes it load on this CPU (voices.precisions, else
// voices.precision, for onnx.provider), as cmd/mynahd's engine chooses.
func mynahdPrecision(cfg config.Config, key, path string) (string, error) {
	model, err := voice.FindPiper(path)
	if err != nil {
		return "", err
	}
	want := cfg.Voices.Precision
	if p, ok := cfg.Voices.Precisions[key]; ok {
		want = p
	}
	if want == "" {
		want = "auto"
	}
	provider := cfg.ONNX.Provider
	if provider == string(ort.ProviderAuto) {
		provider = ""
	}
	precision, _, err := bundle.ChoosePrecision(want, voice.PiperGates(model), provider, cpuclass.Host())
	if precision == "" {
		precision = bundle.PrecisionFP32
	}
	return precision, err
}

// checkStagedVoice is the check a downloaded voice passes before it is
// moved into place: what a load checks before ONNX Runtime sees the
// files.
func checkStagedVoice(dir, model string) error {
	_, err := voice.CheckPiperFiles(model)
	return err
}

func isURL(s string) bool {
	for _, p := range []string{"http://", "https://", "file://"} {
		if strings.HasPrefix(strings.ToLower(s), p) {
			return true
		}
	}
	return false
}

// progressBar draws catalog.Progress: one line redrawn in place on a
// terminal (bytes, rate, time left), else a plain line every
// progressEvery and when a file is complete.
type progressBar struct {
	w        io.Writer
	terminal bool
	last     time.Time
	drawn    bool
}

func newProgressBar(w io.Writer) *progressBar {
	b := &progressBar{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			b.terminal = true
		}
	}
	return b
}

func (b *progressBar) update(p catalog.Progress) {
	every := progressEvery
	if b.terminal {
		every = terminalEvery
	}
	now := time.Now()
	if !p.Complete && now.Sub(b.last) < every {
		return
	}
	b.last = now
	line := progressLine(p)
	if b.terminal {
		fmt.Fprintf(b.w, "\r\033[K%s", line)
		b.drawn = true
		if p.Complete {
			fmt.Fprintln(b.w)
			b.drawn = false
		}
		return
	}
	fmt.Fprintln(b.w, line)
}

// finish ends a line left drawn (a download that failed midway).
func (b *progressBar) finish() {
	if b.drawn {
		fmt.Fprintln(b.w)
		b.drawn = false
	}
}

func progressLine(p catalog.Progress) string {
	if p.Complete {
		return fmt.Sprintf("%s: %s done", p.File, sizeString(p.Done))
	}
	s := fmt.Sprintf("%s: %s", p.File, sizeString(p.Done))
	if p.Total > 0 {
		s += fmt.Sprintf(" of %s (%d%%)", sizeString(p.Total), p.Done*100/p.Total)
	}
	if p.Rate > 0 {
		s += fmt.Sprintf(", %s/s", sizeString(int64(p.Rate)))
		if p.Total > 0 {
			left := time.Duration(float64(p.Total-p.Done) / p.Rate * float64(time.Second))
			s += fmt.Sprintf(", %v left", left.Round(time.Second))
		}
	}
	if p.Resumed > 0 && p.Done == p.Resumed {
		s += fmt.Sprintf(" (resuming at %s)", sizeString(p.Resumed))
	}
	return s
}

// sizeString is a size in decimal units, as download tools show them.
func sizeString(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func runVoiceRemove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("voice remove", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var src sourceFlags
	src.register(fs, false)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("voice remove needs one NAME (mynah voice list shows them)")
	}
	c, err := src.client(&catalog.Options{})
	if err != nil {
		return fmt.Errorf("voice remove: %w", err)
	}
	if err := c.Remove(ctx, pos[0]); err != nil {
		return fmt.Errorf("voice remove: %w", err)
	}
	fmt.Fprintf(stdout, "removed %s from %s\n", pos[0], c.Dir())
	return nil
}

func runVoiceList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("voice list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var src sourceFlags
	src.register(fs, true)
	available := fs.Bool("available", false, "list the catalog's voices too, marking the installed ones (reads the catalog)")
	language := fs.String("language", "", "only voices of this language: a code (en_US) or a family (en)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("voice list takes no arguments")
	}
	c, err := src.client(&catalog.Options{Logger: newLogger(stderr, false)})
	if err != nil {
		return fmt.Errorf("voice list: %w", err)
	}
	installed, err := installedVoices(c.Dir())
	if err != nil {
		return fmt.Errorf("voice list: %w", err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "INSTALLED in %s\n", c.Dir())
	fmt.Fprintln(tw, "NAME\tKIND\tLANGUAGE\tQUALITY\tSPEAKERS\tSIZE\tVARIANTS")
	for _, v := range installed {
		if matchLanguage(v.language, *language) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", v.name, v.kind, dash(v.language), dash(v.quality), v.speakers, sizeString(v.size), dash(strings.Join(v.variants, ",")))
		}
	}
	if *available {
		cat, info, err := c.Catalog(ctx, src.refresh)
		if err != nil {
			tw.Flush()
			return fmt.Errorf("voice list: %w", err)
		}
		fmt.Fprintf(tw, "\nAVAILABLE from %s (fetched %s)\n", info.URL, info.FetchedAt.Local().Format(time.DateTime))
		fmt.Fprintln(tw, "NAME\tLANGUAGE\tQUALITY\tSPEAKERS\tSIZE\tINSTALLED")
		have := map[string]bool{}
		for _, v := range installed {
			have[v.name] = true
		}
		for _, v := range cat.Voices() {
			if !matchLanguage(v.Language.Code, *language) {
				continue
			}
			mark := ""
			if have[v.Key] {
				mark = "yes"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", v.Key, v.Language.Code, v.Quality, v.Speakers(), sizeString(v.Size()), mark)
		}
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// matchLanguage: want is "" (all), a code (en_US, en-us) or a family.
func matchLanguage(code, want string) bool {
	if want == "" {
		return true
	}
	want = strings.ReplaceAll(want, "-", "_")
	family, _, _ := strings.Cut(code, "_")
	return strings.EqualFold(code, want) || strings.EqualFold(family, want)
}

// installedVoice is one row of mynah voice list.
type installedVoice struct {
	name, kind, language, quality string
	speakers                      int
	size                          int64
	variants                      []string
}

// installedVoices lists the voices in dir as the engine finds them: a
// directory with a Piper voice or a voice.json bundle, or a NAME.onnx
// pair directly in dir. Hidden entries (mynah's own state) are not
// voices.
func installedVoices(dir string) ([]installedVoice, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []installedVoice
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir():
			if m, err := bundle.Load(p); err == nil {
				out = append(out, installedVoice{name: e.Name(), kind: m.Manifest.Engine, speakers: 1, size: dirSize(p),
					variants: slices.Sorted(maps.Keys(m.Manifest.Variants))})
				continue
			}
			if model, err := voice.FindPiper(p); err == nil {
				out = append(out, piperRow(e.Name(), model, dirSize(p)))
			}
		case strings.HasSuffix(e.Name(), ".onnx"):
			if st, err := os.Stat(p + ".json"); err == nil {
				info, _ := e.Info()
				size := st.Size()
				if info != nil {
					size += info.Size()
				}
				out = append(out, piperRow(strings.TrimSuffix(e.Name(), ".onnx"), p, size))
			}
		}
	}
	return out, nil
}

func piperRow(name, model string, size int64) installedVoice {
	row := installedVoice{name: name, kind: "piper", speakers: 1, size: size}
	if cfg, err := voice.ReadPiperConfig(model + ".json"); err == nil {
		row.language = cmp(cfg.Language.Code, cfg.Espeak.Voice)
		row.quality = cfg.Audio.Quality
		row.speakers = max(cfg.NumSpeakers, 1)
	} else {
		row.kind = "piper (config unreadable)"
	}
	row.variants = slices.Sorted(maps.Keys(voice.PiperVariants(model)))
	return row
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
