// Command mynahd is the mynah daemon: it listens on MQTT for things to say
// (mostly from Home Assistant), speaks them through the audio device, and
// reports what happened. It runs under systemd (Type=notify) or in a
// terminal.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/cmd/internal/version"
)

// exitConfigError is the exit status for an unusable configuration
// (EX_CONFIG from sysexits.h). The unit's RestartPreventExitStatus=78 keeps
// systemd from restarting mynahd into the same mistake every two seconds.
const exitConfigError = 78

const usage = `mynahd — the mynah text-to-speech daemon

Usage: mynahd [flags]

mynahd reads its configuration from -config, else $MYNAH_CONFIG, else
/etc/mynah/mynahd.yaml (a missing default file means all defaults: the
embedded MQTT broker on 127.0.0.1:1883 and the demo voice). Every key is
documented in systemd/mynahd.yaml.

Then: mosquitto_pub -t mynah/<node>/say -m "Hello"

Flags:
`

func main() {
	os.Exit(mainExit(os.Args[1:], os.Stdout, os.Stderr))
}

func mainExit(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mynahd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	configFlag := fs.String("config", "", "configuration file (default $MYNAH_CONFIG, else /etc/mynah/mynahd.yaml)")
	checkOnly := fs.Bool("check-config", false, "validate the configuration and exit")
	unregister := fs.Bool("unregister", false, "remove this node from Home Assistant (empty retained discovery) and exit")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mynahd: unexpected arguments %q (try -h)\n", fs.Args())
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, "mynahd", version.String())
		return 0
	}
	cfg, path, err := config.LoadFromFlag(*configFlag)
	if err == nil && *checkOnly {
		_, err = cfg.MQTTPassword() // an unreadable password file shows up here too
	}
	if err != nil {
		// 78 (EX_CONFIG) tells systemd not to restart into the same mistake.
		fmt.Fprintf(stderr, "mynahd: %v\n", err)
		return exitConfigError
	}
	if *checkOnly {
		fmt.Fprintf(stdout, "%s: configuration is valid\n", path)
		return 0
	}
	log := newLogger(cfg.Log, os.Stderr)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *unregister {
		err = runUnregister(ctx, cfg, log)
	} else {
		err = run(ctx, cfg, log)
	}
	if err != nil {
		log.Error("mynahd failed", "err", err)
		return 1
	}
	return 0
}
