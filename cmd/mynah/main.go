// Command mynah is the tool a person uses next to the daemon: speak a text,
// make the demo voice, list audio devices.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mynah-tts/mynah/cmd/internal/version"
)

const usage = `mynah — offline text to speech for small devices

Usage:
  mynah say [flags] "text"      speak text (or - for standard input)
  mynah text [flags] "text"     show how a voice reads text: words, phonemes, ids
  mynah voice install NAME      download a Piper voice (key, alias, language or URL), checked
  mynah voice list [--available] installed voices, and the catalog's
  mynah voice remove NAME       remove an installed voice
  mynah voice demo --out DIR    build the demo voice into DIR
  mynah voice info PATH         describe a Piper voice
  mynah devices                 list audio output devices
  mynah cache stats|purge|check inspect or purge the phrase cache (--file)
  mynah enroll --name N REF.wav clone a speaker into a running mynahd (--owner)
  mynah forget --name N         forget a cloned speaker
  mynah speakers                list an owner's cloned speakers
  mynah quantize --mode M IN -o OUT  make a model smaller, checked by a quality gate
  mynah version

Run "mynah COMMAND -h" for a command's flags.
Environment: MYNAH_ORT_LIB (libonnxruntime path), MYNAH_VOICE (default voice).
`

type command struct {
	name string
	run  func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "mynah:", err)
		}
		os.Exit(exitCode(err))
	}
}

// errUsage marks mistakes in the command line (exit status 2).
var errUsage = errors.New("usage")

func exitCode(err error) int {
	if errors.Is(err, errUsage) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	commands := []command{
		{"say", runSay},
		{"text", runText},
		{"voice", runVoice},
		{"devices", runDevices},
		{"cache", runCache},
		{"enroll", runEnroll},
		{"forget", runForget},
		{"speakers", runSpeakers},
		{"quantize", runQuantize},
		{"version", func(context.Context, []string, io.Writer, io.Writer) error {
			fmt.Fprintln(stdout, "mynah", version.String())
			return nil
		}},
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return fmt.Errorf("%w: no command", errUsage)
		}
		return nil
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
}

// parseInterspersed parses flags that may come before or after positional
// arguments ("mynah say hello --rate 1.2"), which the flag package alone
// does not allow. "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func newLogger(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}
