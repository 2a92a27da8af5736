package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/cmd/internal/config"
)

const cacheUsage = `Usage:
  mynah cache stats [--file PATH]                phrases, bytes, hit ratio, speakers, file size
  mynah cache purge --scope SCOPE [--file PATH]  remove cached phrases or speakers
  mynah cache check [--file PATH]                consistency check (exit status 1 on damage)

Without --file, the file is mynahd's cache.file, read from its config
(--config, else $MYNAH_CONFIG, else /etc/mynah/mynahd.yaml when present).

SCOPE is phrases, speakers (cloned speakers), all (phrases, speakers and the
request spool), expired, voice=NAME or older=AGE (a Go duration such as 36h,
or days: 7d).

stats and check work while mynahd runs: they read a consistent copy of its
file. purge needs the file to itself: stop mynahd first, or publish
{"scope":"phrases"} to mynah/<node>/cache/purge.
`

func runCache(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, cacheUsage)
		return usageError("cache needs a subcommand")
	}
	switch args[0] {
	case "stats":
		return runCacheStats(args[1:], stdout, stderr)
	case "purge":
		return runCachePurge(args[1:], stdout, stderr)
	case "check":
		return runCacheCheck(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stderr, cacheUsage)
		return nil
	}
	fmt.Fprint(stderr, cacheUsage)
	return usageError("unknown cache subcommand %q", args[0])
}

// cacheFlags parses the flags every cache subcommand shares (and scope for
// purge); there are no positional arguments.
func cacheFlags(name string, args []string, stderr io.Writer, scope *string) (string, error) {
	set := flag.NewFlagSet("cache "+name, flag.ContinueOnError)
	set.SetOutput(stderr)
	file := set.String("file", "", "the cache file (default: cache.file of mynahd's config, "+config.Default().Cache.File+" when it sets none)")
	configFile := set.String("config", "", "mynahd's config file (default $MYNAH_CONFIG, else "+config.DefaultPath+" if present)")
	if scope != nil {
		set.StringVar(scope, "scope", "", "what to purge: phrases, speakers, all (phrases, speakers and the queue spool), expired, voice=NAME, older=AGE")
	}
	set.Usage = func() {
		fmt.Fprint(stderr, cacheUsage, "\nFlags:\n")
		set.PrintDefaults()
	}
	pos, err := parseInterspersed(set, args)
	if err != nil {
		return "", err
	}
	if len(pos) > 0 {
		return "", usageError("cache %s: unexpected arguments %q", name, pos)
	}
	if *file != "" {
		return *file, nil
	}
	cfg, path, err := config.LoadFromFlag(*configFile)
	if err != nil {
		return "", usageError("--config: %v", err)
	}
	if cfg.Cache.File == "" {
		return "", usageError("%s turns the phrase cache off (cache.file is empty); name a file with --file", path)
	}
	return cfg.Cache.File, nil
}

// openForReading opens the file read-only; a missing file is reported as
// such rather than as an I/O error.
func openForReading(file string) (*cache.Store, error) {
	s, err := cache.Open(file, &cache.Options{ReadOnly: true})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no cache file at %s (has mynahd run with this config yet? see --file and --config)", file)
	}
	return s, err
}

func runCacheStats(args []string, stdout, stderr io.Writer) error {
	file, err := cacheFlags("stats", args, stderr, nil)
	if err != nil {
		return err
	}
	s, err := openForReading(file)
	if err != nil {
		return fmt.Errorf("cache stats: %w", err)
	}
	defer s.Close()
	st := s.Stats()
	note := ""
	if s.Snapshot() {
		note = ", in use: figures from a snapshot, counters as of the daemon's last flush"
	}
	fmt.Fprintf(stdout, "file          %s (%s%s)\n", file, mib(st.FileBytes), note)
	fmt.Fprintf(stdout, "phrases       %d, %s of a %s budget\n", st.Entries, mib(st.Bytes), mib(st.MaxBytes))
	fmt.Fprintf(stdout, "pinned        %d, %s\n", st.PinnedEntries, mib(st.PinnedBytes))
	ratio := "-"
	if n := st.Hits + st.Misses; n > 0 {
		ratio = fmt.Sprintf("%.1f%%", 100*float64(st.Hits)/float64(n))
	}
	fmt.Fprintf(stdout, "hits          %d, misses %d, hit ratio %s\n", st.Hits, st.Misses, ratio)
	fmt.Fprintf(stdout, "evictions     %d, expired %d, write errors %d\n", st.Evictions, st.Expired, st.WriteErrors)
	fmt.Fprintf(stdout, "spool         %d request(s)\n", st.SpoolEntries)
	fmt.Fprintf(stdout, "speakers      %d of %d kept", st.Speakers, st.MaxSpeakers)
	if st.Speakers > 0 {
		fmt.Fprintf(stdout, ", stored as %s: cosine to the original %.7f, relative L2 error %.1e", st.SpeakerPrecision, st.SpeakerCosine, st.SpeakerRelativeL2)
	}
	fmt.Fprintln(stdout)
	return nil
}

func runCachePurge(args []string, stdout, stderr io.Writer) error {
	var scopeText string
	file, err := cacheFlags("purge", args, stderr, &scopeText)
	if err != nil {
		return err
	}
	if scopeText == "" {
		return usageError("cache purge needs --scope (phrases, speakers, all, expired, voice=NAME, older=AGE)")
	}
	scope, err := cache.ParsePurgeScope(scopeText)
	if err != nil {
		return usageError("%v", err)
	}
	if _, err := os.Stat(file); err != nil {
		return fmt.Errorf("cache purge: no cache file at %s: %w", file, err)
	}
	s, err := cache.Open(file, nil)
	if errors.Is(err, cache.ErrLocked) {
		return fmt.Errorf("cache purge: %s is in use by a running mynahd: stop it first, or publish {\"scope\":%q} to mynah/<node>/cache/purge", file, scopeText)
	}
	if err != nil {
		return fmt.Errorf("cache purge: %w", err)
	}
	if r := s.Recovery(); r != nil {
		fmt.Fprintf(stderr, "the cache file was damaged (%s): moved it to %s and started an empty one\n", r.Reason, r.MovedTo)
	}
	n, err := s.Purge(scope)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cache purge: %w", err)
	}
	fmt.Fprintf(stdout, "purged %d record(s) (%s) from %s\n", n, scope, file)
	return nil
}

func runCacheCheck(args []string, stdout, stderr io.Writer) error {
	file, err := cacheFlags("check", args, stderr, nil)
	if err != nil {
		return err
	}
	s, err := openForReading(file)
	if err == nil {
		err = s.Check()
		defer s.Close()
	}
	if errors.Is(err, cache.ErrCorrupt) {
		fmt.Fprintf(stdout, "DAMAGED %s: %v\nmynahd moves a damaged file aside and starts an empty one at its next start.\n", file, err)
		return fmt.Errorf("cache check: %s is damaged", file)
	}
	if err != nil {
		return fmt.Errorf("cache check: %w", err)
	}
	st := s.Stats()
	how := ""
	if s.Snapshot() {
		how = " (a snapshot: mynahd is running)"
	}
	fmt.Fprintf(stdout, "ok %s%s: %d phrases, %d spooled request(s), %s; pages, bbolt consistency and records checked\n",
		file, how, st.Entries, st.SpoolEntries, mib(st.FileBytes))
	return nil
}

func mib(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
