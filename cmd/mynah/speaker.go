package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt"
)

// The speaker commands talk to a running mynahd over MQTT: the daemon owns
// the cache file (and its lock) and the speaker encoder, and the reference
// recording must never be written anywhere on the way.

const speakerUsage = `Usage:
  mynah enroll [flags] --name NAME REF.wav   clone a speaker from 1–30 s of speech
  mynah forget [flags] --name NAME           forget a speaker at once
  mynah speakers [flags]                     list the speakers of an owner

Flags (all commands):
`

// brokerFlags are how the speaker commands reach mynahd. Whatever the
// flags leave out comes from mynahd's config file (--config, else
// $MYNAH_CONFIG, else /etc/mynah/mynahd.yaml when it exists), so on the
// device itself no flag is needed.
type brokerFlags struct {
	configFile, broker, node, owner, username, passwordFile string
	timeout                                                 time.Duration

	fs  *flag.FlagSet
	tls config.MQTT // the config's TLS files, when its broker is used
}

func (b *brokerFlags) register(fs *flag.FlagSet) {
	b.fs = fs
	fs.StringVar(&b.configFile, "config", "", "mynahd's config file, for the flags left out (default $MYNAH_CONFIG, else "+config.DefaultPath+" if present)")
	fs.StringVar(&b.broker, "broker", "tcp://127.0.0.1:1883", "MQTT broker mynahd listens on (default: the config's mqtt.broker, or its embedded broker)")
	fs.StringVar(&b.node, "node", daemon.DefaultNode, "mynahd's node name (default: the config's node)")
	fs.StringVar(&b.owner, "owner", "", "household member the speaker belongs to (topic mynah/<node>/u/<owner>/...); empty: shared by everyone")
	fs.StringVar(&b.username, "username", "", "MQTT user name (default: the config's mqtt.username); with the documented ACL it must be the owner's")
	fs.StringVar(&b.passwordFile, "password-file", "", "file holding the MQTT password ($MYNAH_MQTT_PASSWORD wins; default: the config's, with its user name)")
	fs.DurationVar(&b.timeout, "timeout", 2*time.Minute, "how long to wait for mynahd's answer")
}

// fromConfig fills the flags the command line left out from mynahd's
// config file. A missing file at the default path means built-in defaults.
func (b *brokerFlags) fromConfig() error {
	cfg, path, err := config.LoadFromFlag(b.configFile)
	if err != nil {
		return usageError("--config: %v", err)
	}
	given := map[string]bool{}
	b.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["broker"] {
		if b.broker, err = cfg.BrokerURL(); err != nil {
			return usageError("%s: %v; name the broker with --broker", path, err)
		}
		b.tls = cfg.MQTT
	}
	if !given["node"] {
		b.node = cfg.Node
	}
	if !given["username"] {
		b.username = cfg.MQTT.Username
		if !given["password-file"] {
			b.passwordFile = cfg.MQTT.PasswordFile
		}
	}
	return nil
}

// topic is a speaker command's topic for the owner ("" = shared).
func (b *brokerFlags) topic(command string) string {
	if b.owner == "" {
		return "mynah/" + b.node + "/" + command
	}
	return "mynah/" + b.node + "/u/" + b.owner + "/" + command
}

func (b *brokerFlags) check() error {
	if err := b.fromConfig(); err != nil {
		return err
	}
	if err := daemon.ValidateNode(b.node); err != nil {
		return usageError("--node: %v", err)
	}
	if b.owner != "" {
		if err := daemon.ValidateName(b.owner); err != nil {
			return usageError("--owner: %v", err)
		}
	}
	return nil
}

func (b *brokerFlags) connect(ctx context.Context) (*mqtt.Client, error) {
	creds := config.Config{MQTT: config.MQTT{Username: b.username, PasswordFile: b.passwordFile}}
	password, err := creds.MQTTPassword()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, min(15*time.Second, b.timeout))
	defer cancel()
	c, err := mqtt.Connect(cctx, &mqtt.Options{
		Broker: b.broker, Username: b.username, Password: password,
		CAFile: b.tls.CAFile, CertFile: b.tls.CertFile, KeyFile: b.tls.KeyFile, InsecureSkipVerify: b.tls.InsecureSkipVerify,
		ClientID: fmt.Sprintf("mynah-cli-%d", os.Getpid()), NoStatus: true,
	})
	if err != nil {
		return nil, fmt.Errorf("connect to %s (is mynahd running?): %w", b.broker, err)
	}
	return c, nil
}

// request publishes payload on topic and returns the first event that
// answers it (done or failed for command, with id when id is set).
func (b *brokerFlags) request(ctx context.Context, command, id string, payload []byte) (daemon.Event, error) {
	c, err := b.connect(ctx)
	if err != nil {
		return daemon.Event{}, err
	}
	defer c.Close(context.Background())
	answers := make(chan daemon.Event, 16)
	err = c.Subscribe([]string{"mynah/" + b.node + "/event"}, func(m daemon.Message) {
		var e daemon.Event
		if json.Unmarshal(m.Payload, &e) != nil || e.Command != command || (id != "" && e.ID != id) {
			return
		}
		if e.State == daemon.EventDone || e.State == daemon.EventFailed {
			select {
			case answers <- e:
			default:
			}
		}
	}, nil)
	if err != nil {
		return daemon.Event{}, err
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.Publish(pctx, b.topic(command), payload, false); err != nil {
		return daemon.Event{}, fmt.Errorf("publish: %w", err)
	}
	select {
	case e := <-answers:
		if e.State == daemon.EventFailed {
			return e, fmt.Errorf("mynahd: %s: %s", e.Reason, e.Error)
		}
		return e, nil
	case <-time.After(b.timeout):
		return daemon.Event{}, fmt.Errorf("no answer from mynahd within %v (is node %q right, and may this user publish on %s?)", b.timeout, b.node, b.topic(command))
	case <-ctx.Done():
		return daemon.Event{}, ctx.Err()
	}
}

func speakerFlags(name string, stderr io.Writer, b *brokerFlags) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	b.register(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, speakerUsage)
		fs.PrintDefaults()
	}
	return fs
}

func runEnroll(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var b brokerFlags
	fs := speakerFlags("enroll", stderr, &b)
	name := fs.String("name", "", "the speaker's name, used as \"speaker\" in say requests")
	voiceName := fs.String("voice", "", "the cloning voice whose speaker encoder to use (default: mynahd's choice)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("enroll needs one reference WAV file")
	}
	if err := b.check(); err != nil {
		return err
	}
	if err := daemon.ValidateName(*name); err != nil {
		return usageError("--name: %v", err)
	}
	// Check the file here, with the daemon's own limits, so a mistake is
	// told at once and the recording does not travel for nothing.
	data, err := os.ReadFile(pos[0])
	if err != nil {
		return fmt.Errorf("enroll: %w", err)
	}
	if len(data) > daemon.MaxReferenceBytes {
		return fmt.Errorf("enroll: %s is %d bytes, over the limit of %d: trim it to 1–30 s of speech", pos[0], len(data), daemon.MaxReferenceBytes)
	}
	pcm, err := audio.DecodeWAV(data, &audio.WAVOptions{MaxBytes: daemon.MaxReferenceBytes, MaxDuration: daemon.MaxReferenceDuration})
	if err != nil {
		return fmt.Errorf("enroll: %s: %w", pos[0], err)
	}
	id := fmt.Sprintf("enroll-%d", time.Now().UnixNano())
	payload, err := json.Marshal(map[string]string{
		"id": id, "name": *name, "voice": *voiceName, "audio": base64.StdEncoding.EncodeToString(data),
	})
	if err != nil {
		return err
	}
	if _, err := b.request(ctx, "speaker/enroll", id, payload); err != nil {
		return err
	}
	who := "shared"
	if b.owner != "" {
		who = "owner " + b.owner
	}
	fmt.Fprintf(stdout, "enrolled %q (%s) from %.1f s of audio; the recording was not stored\n", *name, who, pcm.Duration().Seconds())
	return nil
}

func runForget(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var b brokerFlags
	fs := speakerFlags("forget", stderr, &b)
	name := fs.String("name", "", "the speaker to forget")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 1 && *name == "" {
		*name = pos[0]
	} else if len(pos) > 0 {
		return usageError("unexpected arguments %q", pos)
	}
	if err := b.check(); err != nil {
		return err
	}
	if err := daemon.ValidateName(*name); err != nil {
		return usageError("--name: %v", err)
	}
	if _, err := b.request(ctx, "speaker/forget", "", []byte(*name)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "forgot %q\n", *name)
	return nil
}

func runSpeakers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var b brokerFlags
	fs := speakerFlags("speakers", stderr, &b)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("unexpected arguments %q", pos)
	}
	if err := b.check(); err != nil {
		return err
	}
	c, err := b.connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	lists := make(chan []byte, 1)
	if err := c.Subscribe([]string{b.topic("speakers")}, func(m daemon.Message) {
		select {
		case lists <- m.Payload:
		default:
		}
	}, nil); err != nil {
		return err
	}
	var infos []daemon.SpeakerInfo
	select {
	case data := <-lists:
		if err := json.Unmarshal(data, &infos); err != nil {
			return fmt.Errorf("speaker list: %w", err)
		}
	case <-time.After(min(b.timeout, 5*time.Second)):
		return errors.New("no speaker list (mynahd publishes it retained once a cloning voice is installed; is --node right, and may this user read it?)")
	}
	if len(infos) == 0 {
		fmt.Fprintln(stdout, "no speakers")
	}
	for _, s := range infos {
		fmt.Fprintf(stdout, "%-20s voice %-16s enrolled %s\n", s.Name, s.Voice, s.Created.Local().Format(time.DateTime))
	}
	return nil
}
