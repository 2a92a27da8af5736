package config

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// exampleConfig is the documented example installed to /etc/mynah.
const exampleConfig = "../../../systemd/mynahd.yaml"

func TestDefaultConfigIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		field  string // the YAML path the error must name
		change func(*Config)
	}{
		{"node", func(c *Config) { c.Node = "" }},
		{"node", func(c *Config) { c.Node = "Kitchen" }},
		{"node", func(c *Config) { c.Node = "a/b" }},
		{"node", func(c *Config) { c.Node = "+" }},
		{"node", func(c *Config) { c.Node = strings.Repeat("a", MaxNodeLen+1) }},
		{"mqtt.broker", func(c *Config) { c.MQTT.Broker = "ftp://host:21" }},
		{"wyoming.listen", func(c *Config) { c.Wyoming.Listen = "10200" }},
		{"wyoming.listen", func(c *Config) { c.Wyoming.Listen = "0.0.0.0:99999" }},
		{"wyoming.listen", func(c *Config) { c.Wyoming.Listen = "bad host!:10200" }},
		{"wyoming.max_connections", func(c *Config) { c.Wyoming.MaxConnections = 0 }},
		{"wyoming.max_parallel", func(c *Config) { c.Wyoming.MaxParallel = 65 }},
		{"announce.chimes.door", func(c *Config) { c.Announce.Chimes = map[string]string{"door": "door.wav"} }},
		{"announce.chimes.door", func(c *Config) { c.Announce.Chimes = map[string]string{"door": "/etc/door.mp3"} }},
		{"announce.chimes.ding", func(c *Config) { c.Announce.Chimes = map[string]string{"ding": "/etc/ding.wav"} }},
		{"announce.chimes.none", func(c *Config) { c.Announce.Chimes = map[string]string{"none": "/etc/x.wav"} }},
		{"announce.chimes", func(c *Config) { c.Announce.Chimes = map[string]string{"a/b": "/etc/x.wav"} }},
		{"announce.priority", func(c *Config) { c.Announce.Priority = map[string]string{"urgent": "ding"} }},
		{"text.emoji", func(c *Config) { c.Text.Emoji = "read" }},
		{"announce.priority.alert", func(c *Config) { c.Announce.Priority = map[string]string{"alert": "siren"} }},
		{"mqtt.broker", func(c *Config) { c.MQTT.Broker = "tcp://:1883" }},
		{"mqtt.broker", func(c *Config) { c.MQTT.Broker = "tcp://host" }},
		{"mqtt.broker", func(c *Config) { c.MQTT.Broker = "tcp://host:99999" }},
		{"mqtt.broker", func(c *Config) { c.MQTT.Broker = "tcp://user:secret@host:1883" }},
		{"mqtt.broker", func(c *Config) { c.MQTT.Broker = "broker.local:1883" }},
		{"mqtt.broker", func(c *Config) { c.MQTT.Broker = "tcp://host:1883\x00" }},
		{"mqtt.username", func(c *Config) { c.MQTT.Username = "a\nb" }},
		{"voices.precision", func(c *Config) { c.Voices.Precision = "int4" }},
		{"voices.catalog_url", func(c *Config) { c.Voices.CatalogURL = "" }},
		{"voices.catalog_url", func(c *Config) { c.Voices.CatalogURL = "ftp://mirror/voices.json" }},
		{"voices.catalog_url", func(c *Config) { c.Voices.CatalogURL = "file://nas/voices.json" }},
		{"voices.catalog_url", func(c *Config) { c.Voices.CatalogURL = "https:///voices.json" }},
		{"voices.download_url", func(c *Config) { c.Voices.DownloadURL = "file:relative/dir" }},
		{"voices.download_url", func(c *Config) { c.Voices.DownloadURL = "http://mirror/\x00" }},
		{"voices.download_timeout", func(c *Config) { c.Voices.DownloadTimeout = 0 }},
		{"voices.download_timeout", func(c *Config) { c.Voices.DownloadTimeout = 500 * time.Millisecond }},
		{"voices.download_timeout", func(c *Config) { c.Voices.DownloadTimeout = time.Hour }},
		{"voices.precisions.kitchen", func(c *Config) { c.Voices.Precisions = map[string]string{"kitchen": "half"} }},
		{"voices.precisions", func(c *Config) { c.Voices.Precisions = map[string]string{"../x": "fp16"} }},
		{"cache.max_speakers", func(c *Config) { c.Cache.MaxSpeakers = 0 }},
		{"cache.speaker_precision", func(c *Config) { c.Cache.SpeakerPrecision = "fp8" }},
		{"mqtt.password_file", func(c *Config) { c.MQTT.PasswordFile = "/etc/\x00pw" }},
		{"mqtt.client_id", func(c *Config) { c.MQTT.ClientID = "has space" }},
		{"mqtt.client_id", func(c *Config) { c.MQTT.ClientID = strings.Repeat("x", 129) }},
		{"mqtt.keepalive", func(c *Config) { c.MQTT.Keepalive = 0 }},
		{"mqtt.keepalive", func(c *Config) { c.MQTT.Keepalive = 1500 * time.Millisecond }},
		{"mqtt.keepalive", func(c *Config) { c.MQTT.Keepalive = 65536 * time.Second }},
		{"mqtt.ca_file", func(c *Config) { c.MQTT.Broker = "tcp://h:1883"; c.MQTT.CAFile = "/ca.pem" }},
		{"mqtt.ca_file", func(c *Config) { c.MQTT.CAFile = "/ca.pem" }}, // embedded broker has no TLS
		{"mqtt.cert_file", func(c *Config) { c.MQTT.Broker = "ssl://h:8883"; c.MQTT.CertFile = "/c.pem" }},
		{"mqtt.key_file", func(c *Config) { c.MQTT.Broker = "ws://h/mqtt"; c.MQTT.KeyFile = "/k.pem" }},
		{"mqtt.insecure_skip_verify", func(c *Config) { c.MQTT.InsecureSkipVerify = true }},
		{"mqtt.discovery_prefix", func(c *Config) { c.MQTT.DiscoveryPrefix = "" }},
		{"mqtt.discovery_prefix", func(c *Config) { c.MQTT.DiscoveryPrefix = "home/#" }},
		{"mqtt.discovery_prefix", func(c *Config) { c.MQTT.DiscoveryPrefix = "ha/" }},
		{"mqtt.discovery_prefix", func(c *Config) { c.MQTT.DiscoveryPrefix = strings.Repeat("h", 65) }},
		{"mqtt.embedded_listen", func(c *Config) { c.MQTT.EmbeddedListen = "" }},
		{"mqtt.embedded_listen", func(c *Config) { c.MQTT.EmbeddedListen = "1883" }},
		{"mqtt.embedded_listen", func(c *Config) { c.MQTT.EmbeddedListen = "127.0.0.1:70000" }},
		{"mqtt.embedded_listen", func(c *Config) { c.MQTT.EmbeddedListen = "127.0.0.1:+80" }},
		{"mqtt.embedded_listen", func(c *Config) { c.MQTT.EmbeddedListen = "example.com:1883" }},
		{"voices.dir", func(c *Config) { c.Voices.Dir = "" }},
		{"voices.dir", func(c *Config) { c.Voices.Dir = strings.Repeat("d", maxPathLen+1) }},
		{"voices.default", func(c *Config) { c.Voices.Default = "../etc" }},
		{"voices.default", func(c *Config) { c.Voices.Default = "/abs/voice" }},
		{"voices.default", func(c *Config) { c.Voices.Default = ".hidden" }},
		{"voices.default", func(c *Config) { c.Voices.Default = "a+b" }},
		{"voices.default", func(c *Config) { c.Voices.Default = strings.Repeat("v", 65) }},
		{"voices.sessions.max_count", func(c *Config) { c.Voices.Sessions.MaxCount = 0 }},
		{"voices.sessions.max_count", func(c *Config) { c.Voices.Sessions.MaxCount = MaxSessionVoices + 1 }},
		{"voices.sessions.max_count", func(c *Config) { c.Voices.Sessions.Preload = []string{"a", "b", "c", "d"} }},
		{"voices.sessions.max_count", func(c *Config) {
			c.Voices.Sessions.MaxCount, c.Voices.Sessions.Preload, c.Voices.Sessions.Pinned = 2, []string{"a"}, []string{"b"}
		}},
		{"voices.sessions.max_bytes", func(c *Config) { c.Voices.Sessions.MaxBytes = -1 }},
		{"voices.sessions.max_bytes", func(c *Config) { c.Voices.Sessions.MaxBytes = 1000 }},
		{"voices.sessions.max_bytes", func(c *Config) { c.Voices.Sessions.MaxBytes = MaxSessionBytes + 1 }},
		{"voices.sessions.preload[1]", func(c *Config) { c.Voices.Sessions.Preload = []string{"a", "../etc"} }},
		{"voices.sessions.preload[0]", func(c *Config) { c.Voices.Sessions.Preload = []string{""} }},
		{"voices.sessions.preload", func(c *Config) { c.Voices.Sessions.Preload = make([]string, MaxSessionVoices+1) }},
		{"voices.sessions.pinned[0]", func(c *Config) { c.Voices.Sessions.Pinned = []string{strings.Repeat("v", 65)} }},
		{"voices.sessions.pinned[0]", func(c *Config) { c.Voices.Sessions.Pinned = []string{"a/b"} }},
		{"voices.sessions.pinned", func(c *Config) { c.Voices.Sessions.Pinned = make([]string, MaxSessionVoices+1) }},
		{"voices.sessions.low_water", func(c *Config) { c.Voices.Sessions.LowWater = -1 }},
		{"voices.sessions.low_water", func(c *Config) { c.Voices.Sessions.LowWater = MaxSessionBytes + 1 }},
		{"voices.sessions.memory_budget", func(c *Config) { c.Voices.Sessions.MemoryBudget = -1 }},
		{"voices.sessions.memory_budget", func(c *Config) { c.Voices.Sessions.MemoryBudget = 1 << 20 }},
		{"voices.sessions.memory_budget", func(c *Config) { c.Voices.Sessions.MemoryBudget = 64 << 20 }}, // = low_water
		{"voices.sessions.memory_budget", func(c *Config) {
			c.Voices.Sessions.MemoryBudget, c.Voices.Sessions.LowWater = 1<<30, 0
		}},
		{"voices.sessions.check_interval", func(c *Config) { c.Voices.Sessions.CheckInterval = -time.Second }},
		{"voices.sessions.check_interval", func(c *Config) { c.Voices.Sessions.CheckInterval = time.Millisecond }},
		{"voices.sessions.check_interval", func(c *Config) { c.Voices.Sessions.CheckInterval = 2 * time.Hour }},
		{"onnx.library", func(c *Config) { c.ONNX.Library = "lib\x00.so" }},
		{"onnx.provider", func(c *Config) { c.ONNX.Provider = "rocm" }},
		{"onnx.provider", func(c *Config) { c.ONNX.Provider = "" }},
		{"onnx.threads", func(c *Config) { c.ONNX.Threads = -1 }},
		{"onnx.threads", func(c *Config) { c.ONNX.Threads = 100000 }},
		{"audio.device", func(c *Config) { c.Audio.Device = "hw:0\x00" }},
		{"audio.volume", func(c *Config) { c.Audio.Volume = -0.1 }},
		{"audio.volume", func(c *Config) { c.Audio.Volume = 1.5 }},
		{"audio.volume", func(c *Config) { c.Audio.Volume = math.NaN() }},
		{"audio.volume", func(c *Config) { c.Audio.Volume = math.Inf(1) }},
		{"audio.write_timeout", func(c *Config) { c.Audio.WriteTimeout = 0 }},
		{"audio.write_timeout", func(c *Config) { c.Audio.WriteTimeout = time.Hour }},
		{"audio.sentence_silence", func(c *Config) { c.Audio.SentenceSilence = -time.Second }},
		{"audio.sentence_silence", func(c *Config) { c.Audio.SentenceSilence = time.Minute }},
		{"audio.fallback", func(c *Config) { c.Audio.Fallback = "wav" }},
		{"queue.size", func(c *Config) { c.Queue.Size = 0 }},
		{"queue.size", func(c *Config) { c.Queue.Size = MaxQueueSize + 1 }},
		{"queue.default_ttl", func(c *Config) { c.Queue.DefaultTTL = 0 }},
		{"queue.default_ttl", func(c *Config) { c.Queue.DefaultTTL = 25 * time.Hour }},
		{"watchdog_stall", func(c *Config) { c.WatchdogStall = 0 }},
		{"watchdog_stall", func(c *Config) { c.WatchdogStall = 2 * time.Hour }},
		{"watchdog_stall", func(c *Config) { c.WatchdogStall = 2 * time.Second }}, // = audio.write_timeout
		{"groups.names[1]", func(c *Config) { c.Groups.Names = []string{"all", "up+stairs"} }},
		{"render.mode", func(c *Config) { c.Render.Mode = "cluster" }},
		{"render.mode", func(c *Config) { c.Render.Mode = "" }},
		{"render.timeout", func(c *Config) { c.Render.Timeout = 10 * time.Millisecond }},
		{"render.timeout", func(c *Config) { c.Render.Timeout = time.Hour }},
		{"groups.names[0]", func(c *Config) { c.Groups.Names = []string{"floor#1"} }},
		{"groups.names[0]", func(c *Config) { c.Groups.Names = []string{"house/down"} }},
		{"groups.names[0]", func(c *Config) { c.Groups.Names = []string{"$SYS"} }},
		{"groups.names[0]", func(c *Config) { c.Groups.Names = []string{"living room"} }},
		{"groups.names[0]", func(c *Config) { c.Groups.Names = []string{"küche"} }},
		{"groups.names[0]", func(c *Config) { c.Groups.Names = []string{""} }},
		{"groups.names[0]", func(c *Config) { c.Groups.Names = []string{strings.Repeat("g", MaxGroupNameLen+1)} }},
		{"groups.names[2]", func(c *Config) { c.Groups.Names = []string{"all", "up", "all"} }},
		{"groups.names", func(c *Config) { c.Groups.Names = groupNames(MaxGroups + 1) }},
		{"groups.lead", func(c *Config) { c.Groups.Lead = 0 }},
		{"groups.lead", func(c *Config) { c.Groups.Lead = 49 * time.Millisecond }},
		{"groups.lead", func(c *Config) { c.Groups.Lead = 11 * time.Second }},
		{"groups.max_late", func(c *Config) { c.Groups.MaxLate = -time.Millisecond }},
		{"groups.max_late", func(c *Config) { c.Groups.MaxLate = 2 * time.Second }},
		{"groups.clock_check", func(c *Config) { c.Groups.ClockCheck = -time.Second }},
		{"groups.clock_check", func(c *Config) { c.Groups.ClockCheck = 5 * time.Second }},
		{"groups.clock_check", func(c *Config) { c.Groups.ClockCheck = 25 * time.Hour }},
		{"groups.clock_probe", func(c *Config) { c.Groups.ClockProbe = -time.Second }},
		{"groups.clock_probe", func(c *Config) { c.Groups.ClockProbe = 9 * time.Second }},
		{"groups.clock_probe", func(c *Config) { c.Groups.ClockProbe = 25 * time.Hour }},
		{"groups.clock_probe", func(c *Config) { c.Groups.ClockProbe, c.Groups.ClockCheck = time.Minute, 0 }},
		{"log.level", func(c *Config) { c.Log.Level = "trace" }},
		{"log.level", func(c *Config) { c.Log.Level = "INFO" }},
		{"log.format", func(c *Config) { c.Log.Format = "xml" }},
	}
	for _, tt := range tests {
		c := Default()
		tt.change(&c)
		err := c.Validate()
		if err == nil {
			t.Errorf("%s: %+v: Validate() = nil, want an error", tt.field, c)
			continue
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %q does not wrap ErrInvalid", tt.field, err)
		}
		var fe *fieldError
		if !errors.As(err, &fe) || fe.Field != tt.field || !strings.HasPrefix(err.Error(), tt.field+": ") {
			t.Errorf("%s: error %q does not name the field first", tt.field, err)
		}
	}
}

func TestValidateAccepts(t *testing.T) {
	tests := []func(*Config){
		func(c *Config) { c.MQTT.Broker = "tcp://broker.local:1883" },
		func(c *Config) { c.MQTT.Broker = "tcp://[::1]:1883" },
		func(c *Config) {
			c.MQTT.Broker = "ssl://broker:8883"
			c.MQTT.CAFile, c.MQTT.CertFile, c.MQTT.KeyFile = "/ca", "/crt", "/key"
			c.MQTT.InsecureSkipVerify = true
		},
		func(c *Config) { c.MQTT.Broker = "wss://ha.local/mqtt"; c.MQTT.CAFile = "/ca" },
		func(c *Config) { c.MQTT.Broker = "ws://ha.local:8080/mqtt"; c.MQTT.EmbeddedListen = "" },
		func(c *Config) { c.MQTT.EmbeddedListen = "127.0.0.1:0" },
		func(c *Config) { c.MQTT.EmbeddedListen = ":1883" },
		func(c *Config) { c.MQTT.EmbeddedListen = "localhost:1883" },
		func(c *Config) { c.MQTT.DiscoveryPrefix = "ha/discovery" },
		func(c *Config) { c.Node = "living-room_2"; c.MQTT.ClientID = "speaker-42" },
		func(c *Config) { c.Voices.Default = "en_US-lessac-medium" },
		func(c *Config) {
			c.Voices.CatalogURL, c.Voices.DownloadURL = "file:///srv/piper-voices/voices.json", "file:///srv/piper-voices/"
		},
		func(c *Config) {
			c.Voices.CatalogURL, c.Voices.DownloadURL = "http://mirror.lan:8080/piper/voices.json", "http://mirror.lan:8080/piper/"
		},
		func(c *Config) { c.Voices.Download, c.Voices.DownloadTimeout = true, 10*time.Minute },
		func(c *Config) { c.Voices.Download, c.Voices.DownloadTimeout = true, time.Second },
		func(c *Config) { c.ONNX.Provider, c.ONNX.Threads = "tensorrt", 2 },
		func(c *Config) {
			// The default voice, named or not, counts once.
			c.Voices.Sessions.Preload = []string{"mynah-demo", "a", "b"}
			c.Voices.Sessions.Pinned = []string{"a", "b", "c"}
		},
		func(c *Config) {
			c.Voices.Default = "a"
			c.Voices.Sessions.MaxCount, c.Voices.Sessions.Preload, c.Voices.Sessions.Pinned = 1, []string{"a"}, []string{"a"}
		},
		func(c *Config) {
			s := &c.Voices.Sessions
			s.MaxCount, s.MaxBytes, s.LowWater, s.MemoryBudget, s.CheckInterval = MaxSessionVoices, 1<<20, 0, 0, 0
		},
		func(c *Config) {
			s := &c.Voices.Sessions
			s.MaxBytes, s.LowWater, s.MemoryBudget, s.CheckInterval = MaxSessionBytes, 1, 16<<20, time.Hour
		},
		func(c *Config) { c.Audio.Volume, c.Audio.SentenceSilence, c.Audio.Fallback = 0, 0, "null" },
		func(c *Config) { c.Queue.Size, c.Queue.DefaultTTL = MaxQueueSize, time.Second },
		func(c *Config) { c.Log.Level, c.Log.Format = "debug", "journal" },
		func(c *Config) { c.Groups.Names = []string{"downstairs", "all", "Floor_2", "x-1", "0"} },
		func(c *Config) { c.Groups.Names = []string{strings.Repeat("g", MaxGroupNameLen)} },
		func(c *Config) { c.Groups.Names = groupNames(MaxGroups) },
		func(c *Config) { c.Groups.Names = []string{"all", "All"} }, // topics are case-sensitive
		func(c *Config) { c.Groups.Names = nil },
		func(c *Config) { c.Groups.Lead, c.Groups.MaxLate, c.Groups.ClockCheck = 50*time.Millisecond, 0, 0 },
		func(c *Config) {
			c.Groups.Lead, c.Groups.MaxLate, c.Groups.ClockCheck = 10*time.Second, time.Second, 10*time.Second
		},
		func(c *Config) { c.Groups.ClockCheck = 24 * time.Hour },
		func(c *Config) { c.Groups.ClockProbe = 10 * time.Second },
		func(c *Config) { c.Groups.ClockProbe = 24 * time.Hour },
		func(c *Config) { c.Groups.ClockProbe, c.Groups.ClockCheck = 0, 0 },
	}
	for i, change := range tests {
		c := Default()
		change(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("case %d: Validate() = %v", i, err)
		}
	}
}

// groupNames returns n distinct valid group names.
func groupNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = "g" + strconv.Itoa(i)
	}
	return names
}

func TestValidateGroupNameMessages(t *testing.T) {
	for _, tt := range []struct {
		names []string
		want  string
	}{
		{[]string{"all", "up+stairs"},
			`groups.names[1]: "up+stairs": a group name may hold letters, digits, - and _ only (no MQTT wildcards + # or /)`},
		{[]string{"all", "up", "all"}, `groups.names[2]: "all" is groups.names[0] again`},
		{[]string{""}, "groups.names[0]: must not be empty"},
		{[]string{strings.Repeat("g", 65)}, "groups.names[0]: 65 characters; at most 64 (MaxGroupNameLen)"},
		{groupNames(17), "groups.names: 17 groups, at most 16 (MaxGroups)"},
	} {
		c := Default()
		c.Groups.Names = tt.names
		if err := c.Validate(); err == nil || err.Error() != tt.want {
			t.Errorf("names %q: Validate() = %v, want %s", tt.names, err, tt.want)
		}
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := Default()
	c.Node, c.Queue.Size, c.Log.Format = "", 0, "xml"
	err := c.Validate()
	for _, field := range []string{"node: ", "queue.size: ", "log.format: "} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Validate() = %v, want it to name %q", err, field)
		}
	}
}

// TestExampleConfig keeps systemd/mynahd.yaml and Default in step:
// the example must set every key, and to its default.
func TestExampleConfig(t *testing.T) {
	data, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(data)
	if err != nil {
		t.Fatalf("example config: %v", err)
	}
	if !reflect.DeepEqual(got, Default()) {
		t.Errorf("example config differs from Default():\n got %+v\nwant %+v", got, Default())
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	inStruct := structKeyPaths(reflect.TypeOf(Config{}), "")
	inExample := yamlKeyPaths(root.Content[0], "", inStruct)
	for _, k := range inStruct {
		if !slices.Contains(inExample, k) {
			t.Errorf("example config does not set %s", k)
		}
	}
	if len(inExample) != len(inStruct) {
		t.Errorf("example has keys %v, Config has %v", inExample, inStruct)
	}
	// Every key is documented: walking up from it over the keys of its
	// group (ca_file, cert_file, key_file share one) reaches a comment.
	lines := strings.Split(string(data), "\n")
	isKey := func(l string) bool {
		l = strings.TrimSpace(l)
		return l != "" && !strings.HasPrefix(l, "#") && !strings.HasSuffix(l, ":")
	}
	for i, line := range lines {
		if !isKey(line) {
			continue
		}
		j := i - 1
		for j >= 0 && isKey(lines[j]) {
			j--
		}
		if j < 0 || !strings.HasPrefix(strings.TrimSpace(lines[j]), "#") {
			t.Errorf("example line %d %q has no comment above it", i+1, strings.TrimSpace(line))
		}
	}
}

// yamlKeyPaths lists the key paths of n; a path in leaves (a field whose
// value is a map, such as announce.priority) is not walked into.
func yamlKeyPaths(n *yaml.Node, prefix string, leaves []string) []string {
	var out []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		p := joinPath(prefix, n.Content[i].Value)
		if v := n.Content[i+1]; v.Kind == yaml.MappingNode && len(v.Content) > 0 && !slices.Contains(leaves, p) {
			out = append(out, yamlKeyPaths(v, p, leaves)...)
		} else {
			out = append(out, p)
		}
	}
	return out
}

func structKeyPaths(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" {
			continue
		}
		p := joinPath(prefix, name)
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			out = append(out, structKeyPaths(f.Type, p)...)
		} else {
			out = append(out, p)
		}
	}
	return out
}

func TestEveryFieldHasYAMLTag(t *testing.T) {
	var walk func(reflect.Type)
	walk = func(rt reflect.Type) {
		for i := range rt.NumField() {
			f := rt.Field(i)
			if tag := f.Tag.Get("yaml"); tag == "" || tag == "-" {
				t.Errorf("%s.%s has no yaml tag", rt.Name(), f.Name)
			}
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type)
			}
		}
	}
	walk(reflect.TypeOf(Config{}))
}

func TestClientID(t *testing.T) {
	c := Default()
	c.Node = "porch"
	if got := c.ClientID(); got != "mynahd-porch" {
		t.Errorf("ClientID() = %q", got)
	}
	c.MQTT.ClientID = "fixed"
	if got := c.ClientID(); got != "fixed" {
		t.Errorf("ClientID() = %q", got)
	}
}

func TestMQTTPassword(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, env, file, user string
		want, errPart         string
	}{
		{name: "none", want: ""},
		{name: "file trimmed", file: write("pw", "  s3cret\n"), user: "u", want: "s3cret"},
		{name: "env wins", env: "fromenv", file: write("pw2", "fromfile\n"), user: "u", want: "fromenv"},
		{name: "env without file", env: "fromenv", user: "u", want: "fromenv"},
		{name: "missing file", file: filepath.Join(dir, "nope"), user: "u", errPart: "mqtt.password_file: "},
		{name: "empty file", file: write("empty", "\n\n"), user: "u", errPart: "is empty"},
		{name: "oversized file", file: write("big", strings.Repeat("p", MaxPasswordBytes+1)), user: "u", errPart: "MaxPasswordBytes"},
		{name: "at the limit", file: write("limit", strings.Repeat("p", MaxPasswordBytes)), user: "u", want: strings.Repeat("p", MaxPasswordBytes)},
		{name: "directory", file: dir, user: "u", errPart: "not a regular file"},
		{name: "no user name", file: write("pw3", "x"), errPart: "needs mqtt.username"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvMQTTPassword, tt.env)
			c := Default()
			c.MQTT.PasswordFile, c.MQTT.Username = tt.file, tt.user
			got, err := c.MQTTPassword()
			if tt.errPart != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errPart) {
					t.Fatalf("MQTTPassword() = %q, %v; want an error containing %q", got, err, tt.errPart)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("MQTTPassword() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestBrokerURL(t *testing.T) {
	for _, c := range []struct {
		broker, listen, want string
		err                  bool
	}{
		{"ssl://hub.lan:8883", "127.0.0.1:1883", "ssl://hub.lan:8883", false},
		{"", "127.0.0.1:1883", "tcp://127.0.0.1:1883", false},
		{"", "0.0.0.0:1884", "tcp://127.0.0.1:1884", false},
		{"", ":1885", "tcp://127.0.0.1:1885", false},
		{"", "[::]:1886", "tcp://127.0.0.1:1886", false},
		{"", "[::1]:1887", "tcp://[::1]:1887", false},
		{"", "localhost:1888", "tcp://localhost:1888", false},
		{"", "127.0.0.1:0", "", true},
		{"", "nonsense", "", true},
	} {
		cfg := Default()
		cfg.MQTT.Broker, cfg.MQTT.EmbeddedListen = c.broker, c.listen
		got, err := cfg.BrokerURL()
		if got != c.want || (err != nil) != c.err {
			t.Errorf("broker %q listen %q: %q, %v; want %q (error %v)", c.broker, c.listen, got, err, c.want, c.err)
		}
	}
}
