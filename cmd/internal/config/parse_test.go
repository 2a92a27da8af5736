package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want func(*Config) // nil: expect an error
		msg  string        // part of the expected error
	}{
		{"empty", "", func(*Config) {}, ""},
		{"only comments", "# nothing\n", func(*Config) {}, ""},
		{"null sections keep defaults", "mqtt:\nvoices:\n  dir:\n", func(*Config) {}, ""},
		{"values", "node: kitchen\nmqtt:\n  broker: tcp://b:1883\n  keepalive: 1m\naudio:\n  volume: 0.5\n  sentence_silence: 0s\n",
			func(c *Config) {
				c.Node, c.MQTT.Broker, c.MQTT.Keepalive = "kitchen", "tcp://b:1883", time.Minute
				c.Audio.Volume, c.Audio.SentenceSilence = 0.5, 0
			}, ""},
		{"onnx switches off", "onnx:\n  arena: false\n  lift_conv1d: false\n  block_leaky_relu: false\n",
			func(c *Config) { c.ONNX.Arena, c.ONNX.LiftConv1D, c.ONNX.BlockLeakyRelu = false, false, false }, ""},
		{"onnx switch not a bool", "onnx:\n  lift_conv1d: maybe\n", nil, `onnx.lift_conv1d: "maybe" is not true or false (line 2)`},
		{"flow style", "queue: {size: 8, default_ttl: 5s}\n", func(c *Config) { c.Queue.Size, c.Queue.DefaultTTL = 8, 5*time.Second }, ""},
		{"voice sessions", "voices:\n  sessions:\n    max_count: 6\n    max_bytes: 104857600\n    preload: [alto, bass]\n" +
			"    pinned:\n      - alto\n    low_water: 0\n    memory_budget: 536870912\n    check_interval: 1m\n",
			func(c *Config) {
				s := &c.Voices.Sessions
				s.MaxCount, s.MaxBytes, s.Preload, s.Pinned = 6, 100<<20, []string{"alto", "bass"}, []string{"alto"}
				s.LowWater, s.MemoryBudget, s.CheckInterval = 0, 512<<20, time.Minute
			}, ""},
		{"sessions unknown key", "voices:\n  sessions:\n    max: 3\n", nil, "voices.sessions.max: unknown key (line 3); known keys here: check_interval, low_water"},
		{"sessions preload not a list", "voices:\n  sessions:\n    preload: alto\n", nil, "voices.sessions.preload: expected a list"},
		{"sessions interval without unit", "voices:\n  sessions:\n    check_interval: 30\n", nil, `voices.sessions.check_interval: "30" has no unit`},
		{"unknown top-level key", "nodes: x\n", nil, `nodes: unknown key (line 1)`},
		{"unknown nested key", "mqtt:\n  brokr: tcp://b:1883\n", nil, `mqtt.brokr: unknown key (line 2); known keys here: broker, ca_file`},
		{"unknown key in alias", "x: &a {size: 1, bogus: 2}\n", nil, "x: unknown key"},
		{"duplicate key", "node: a\nnode: b\n", nil, "node: key repeated (lines 1 and 2)"},
		{"duplicate nested key", "mqtt:\n  broker: a\n  broker: b\n", nil, "mqtt.broker: key repeated"},
		{"duplicate key in a value", "node: {a: 1, a: 2}\n", nil, "node: expected a single value, found a mapping"},
		{"duration without unit", "queue:\n  default_ttl: 60\n", nil, `queue.default_ttl: "60" has no unit`},
		{"duration float", "watchdog_stall: 1.5\n", nil, `watchdog_stall: "1.5" has no unit`},
		{"bad duration", "mqtt:\n  keepalive: soon\n", nil, "cannot unmarshal"},
		{"wrong type string", "queue:\n  size: many\n", nil, "cannot unmarshal"},
		{"wrong type map", "node: {a: 1}\n", nil, "node: expected a single value, found a mapping (line 1)"},
		{"wrong type seq", "mqtt: [1, 2]\n", nil, "mqtt: expected a mapping of keys, found a list (line 1)"},
		{"duration as map", "watchdog_stall: {s: 1}\n", nil, "watchdog_stall: expected a single value"},
		{"not a mapping", "just text\n", nil, "config: expected a mapping of keys, found a single value"},
		{"alias to a section", "mqtt: &m {broker: \"\"}\nvoices: *m\n", nil, "field broker not found"},
		{"alias to a value", "mqtt: {client_id: &id x}\nnode: *id\n", func(c *Config) { c.MQTT.ClientID, c.Node = "x", "x" }, ""},
		{"overflow float", "audio:\n  volume: 1e309\n", nil, "cannot unmarshal"},
		{"groups as a list", "groups: [downstairs, all]\n",
			func(c *Config) { c.Groups.Names = []string{"downstairs", "all"} }, ""},
		{"groups as a block list", "groups:\n  - downstairs\n  - all\n",
			func(c *Config) { c.Groups.Names = []string{"downstairs", "all"} }, ""},
		{"groups as an empty list", "groups: []\n", func(*Config) {}, ""},
		{"groups as a mapping", "groups: {names: [downstairs, all], lead: 1s, max_late: 0s, clock_check: 1h, clock_probe: 1m}\n",
			func(c *Config) {
				g := &c.Groups
				g.Names, g.Lead, g.MaxLate, g.ClockCheck = []string{"downstairs", "all"}, time.Second, 0, time.Hour
				g.ClockProbe = time.Minute
			}, ""},
		{"groups mapping, some keys", "groups:\n  max_late: 20ms\n", func(c *Config) { c.Groups.MaxLate = 20 * time.Millisecond }, ""},
		{"groups null", "groups:\n", func(*Config) {}, ""},
		{"groups null names keep none", "groups:\n  names:\n  lead: 2s\n", func(c *Config) { c.Groups.Lead = 2 * time.Second }, ""},
		{"groups alias", "voices:\n  sessions:\n    preload: &g [all]\ngroups: *g\n",
			func(c *Config) { c.Voices.Sessions.Preload, c.Groups.Names = []string{"all"}, []string{"all"} }, ""},
		{"groups as a single value", "groups: all\n", nil,
			"groups: expected a list of group names or a mapping of keys (names, lead, max_late, clock_check, clock_probe), found a single value (line 1)"},
		{"groups unknown key", "groups:\n  names: [all]\n  leed: 1s\n", nil,
			"groups.leed: unknown key (line 3); known keys here: clock_check, clock_probe, lead, max_late, names"},
		{"groups list holds a mapping", "groups: [all, {up: 1}]\n", nil, "groups.names[1]: expected a single value, found a mapping (line 1)"},
		{"groups names not a list", "groups:\n  names: all\n", nil, "groups.names: expected a list, found a single value (line 2)"},
		{"groups lead without unit", "groups:\n  lead: 500\n", nil, `groups.lead: "500" has no unit`},
		{"groups key repeated", "groups:\n  lead: 1s\n  lead: 2s\n", nil, "groups.lead: key repeated (lines 2 and 3)"},
		{"groups bad duration", "groups: {clock_check: often}\n", nil, "cannot unmarshal"},
		{"groups clock_probe as a bool", "groups: {clock_probe: true}\n", nil, "cannot unmarshal"},
		{"groups clock_probe without unit", "groups: {clock_probe: 60}\n", nil, `groups.clock_probe: "60" has no unit`},
		{"invalid yaml", "node: [unclosed\n", nil, "yaml:"},
		{"tab indent", "mqtt:\n\tbroker: x\n", nil, "yaml:"},
		{"two documents", "node: a\n---\nnode: b\n", nil, "more than one YAML document"},
	}
	for _, tt := range tests {
		got, err := Parse([]byte(tt.yaml))
		if tt.want == nil {
			if err == nil {
				t.Errorf("%s: Parse = %+v, want an error containing %q", tt.name, got, tt.msg)
			} else if !strings.Contains(err.Error(), tt.msg) || !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: error %q, want one containing %q and wrapping ErrInvalid", tt.name, err, tt.msg)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: Parse: %v", tt.name, err)
			continue
		}
		want := Default()
		tt.want(&want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Parse =\n%+v\nwant\n%+v", tt.name, got, want)
		}
	}
}

// TestGroupsUnmarshalYAML decodes the groups section without Parse's
// checks, as yaml.v3 alone calls the unmarshaler: KnownFields does not
// reach it, so it must refuse unknown keys itself.
func TestGroupsUnmarshalYAML(t *testing.T) {
	def := Default().Groups
	tests := []struct {
		yaml string
		want func(*Groups) // nil: expect an error
		msg  string
	}{
		{"groups: [a, b]\n", func(g *Groups) { g.Names = []string{"a", "b"} }, ""},
		{"groups: {names: [a], lead: 2s}\n", func(g *Groups) { g.Names, g.Lead = []string{"a"}, 2*time.Second }, ""},
		{"groups: {names: null}\n", func(*Groups) {}, ""},
		{"groups: {names: [a], bogus: 1}\n", nil, "groups.bogus: unknown key (line 1)"},
		{"groups: a\n", nil, "groups: expected a list of group names or a mapping of keys"},
		{"groups: {lead: 500}\n", nil, `groups.lead: "500" has no unit`},
		{"groups: {lead: soon}\n", nil, "groups: yaml: unmarshal errors"},
	}
	for _, tt := range tests {
		var got struct {
			Groups Groups `yaml:"groups"`
		}
		got.Groups = def
		dec := yaml.NewDecoder(strings.NewReader(tt.yaml))
		dec.KnownFields(true)
		err := dec.Decode(&got)
		if tt.want == nil {
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("%q: Decode = %v, want an error containing %q", tt.yaml, err, tt.msg)
			}
			continue
		}
		want := def
		tt.want(&want)
		if err != nil || !reflect.DeepEqual(got.Groups, want) {
			t.Errorf("%q: Decode = %+v, %v; want %+v", tt.yaml, got.Groups, err, want)
		}
	}
}

func TestParseConfigNaNVolumeFailsValidation(t *testing.T) {
	c, err := Parse([]byte("audio:\n  volume: .nan\n"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "audio.volume: ") {
		t.Fatalf("Validate() = %v, want an audio.volume error", err)
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfig(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		c, err := Load(writeFile(t, "c.yaml", "node: porch\n"))
		if err != nil || c.Node != "porch" {
			t.Fatalf("Load = %+v, %v", c, err)
		}
	})
	t.Run("empty file is defaults", func(t *testing.T) {
		c, err := Load(writeFile(t, "c.yaml", ""))
		if err != nil || !reflect.DeepEqual(c, Default()) {
			t.Fatalf("Load = %+v, %v", c, err)
		}
	})
	t.Run("oversized", func(t *testing.T) {
		big := "# " + strings.Repeat("x", MaxFileBytes) + "\n"
		_, err := Load(writeFile(t, "c.yaml", big))
		if err == nil || !strings.Contains(err.Error(), "MaxFileBytes") || !errors.Is(err, ErrInvalid) {
			t.Fatalf("Load(oversized) = %v, want an error naming MaxFileBytes", err)
		}
	})
	t.Run("at the limit", func(t *testing.T) {
		body := "node: edge\n"
		body += "#" + strings.Repeat("x", MaxFileBytes-len(body)-2) + "\n"
		if len(body) != MaxFileBytes {
			t.Fatalf("test body is %d bytes", len(body))
		}
		if c, err := Load(writeFile(t, "c.yaml", body)); err != nil || c.Node != "edge" {
			t.Fatalf("Load = %+v, %v", c, err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "none.yaml")
		_, err := Load(p)
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), p) {
			t.Fatalf("Load(missing) = %v, want fs.ErrNotExist naming the path", err)
		}
	})
	t.Run("error names the file", func(t *testing.T) {
		p := writeFile(t, "c.yaml", "bogus: 1\n")
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Fatalf("Load = %v, want an error naming %s", err, p)
		}
	})
	t.Run("directory", func(t *testing.T) {
		if _, err := Load(t.TempDir()); err == nil {
			t.Fatal("Load(directory) = nil error")
		}
	})
}

func TestConfigPath(t *testing.T) {
	t.Setenv(EnvConfig, "")
	if p, explicit := Path(""); p != DefaultPath || explicit {
		t.Errorf("Path(\"\") = %q, %v; want the default, not explicit", p, explicit)
	}
	t.Setenv(EnvConfig, "/env/mynahd.yaml")
	if p, explicit := Path(""); p != "/env/mynahd.yaml" || !explicit {
		t.Errorf("with $%s: Path = %q, %v", EnvConfig, p, explicit)
	}
	if p, explicit := Path("/flag.yaml"); p != "/flag.yaml" || !explicit {
		t.Errorf("flag over env: Path = %q, %v", p, explicit)
	}
}

func TestLoadConfigFromFlag(t *testing.T) {
	t.Setenv(EnvConfig, "")
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	if _, _, err := LoadFromFlag(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("explicit missing file: err = %v, want fs.ErrNotExist", err)
	}
	t.Setenv(EnvConfig, missing)
	if _, _, err := LoadFromFlag(""); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing $%s file: err = %v, want fs.ErrNotExist", EnvConfig, err)
	}
	p := writeFile(t, "bad.yaml", "queue:\n  size: 0\n")
	if _, _, err := LoadFromFlag(p); err == nil || !errors.Is(err, ErrInvalid) ||
		!strings.Contains(err.Error(), "queue.size: ") || !strings.Contains(err.Error(), p) {
		t.Errorf("invalid file: err = %v, want queue.size and the path", err)
	}
	p = writeFile(t, "ok.yaml", "node: hall\n")
	if c, used, err := LoadFromFlag(p); err != nil || used != p || c.Node != "hall" {
		t.Errorf("LoadFromFlag = %+v, %q, %v", c, used, err)
	}
	// The default path's missing-means-defaults rule cannot be exercised
	// without writing to /etc; TestConfigPath covers the explicit flag.
}

func FuzzParseConfig(f *testing.F) {
	if data, err := os.ReadFile(exampleConfig); err == nil {
		f.Add(data)
	}
	for _, s := range []string{
		"", "node: x\n", "mqtt:\n  keepalive: 30\n", "queue: {size: 1e9}\n",
		"a: &a [*a]\n", "x: &x {y: *x}\n", "audio:\n  volume: .nan\n",
		"node: a\n---\n", "mqtt:\n  broker: \"tcp://h:1883\"\n  bogus: 1\n",
		"? [a]\n: b\n", "<<: {node: x}\n", "!!binary aGVsbG8=\n", "watchdog_stall: -5s\n",
		"node: \"\\0\"\n", strings.Repeat("[", 1000),
		"groups: [a, b]\n", "groups: {names: [a], lead: 1s, bogus: 1}\n", "groups: a\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %q does not wrap ErrInvalid", err)
			}
			return
		}
		// Whatever parsed must validate without panicking, and a valid
		// config must survive a round trip through YAML unchanged.
		if c.Validate() != nil {
			return
		}
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("marshal a valid config: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("reparse %q: %v", out, err)
		}
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("round trip changed the config:\n%+v\n%+v", c, back)
		}
	})
}

func BenchmarkParseConfigExample(b *testing.B) {
	data, err := os.ReadFile(exampleConfig)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
