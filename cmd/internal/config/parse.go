package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Path returns the config file to read: flagValue if not empty, else
// $MYNAH_CONFIG if set, else DefaultPath. explicit reports whether
// the user named the file (then a missing file is an error).
func Path(flagValue string) (path string, explicit bool) {
	if flagValue != "" {
		return flagValue, true
	}
	if p := os.Getenv(EnvConfig); p != "" {
		return p, true
	}
	return DefaultPath, false
}

// LoadFromFlag resolves the path with Path, loads and validates
// the file. A missing file at the default path means defaults: mynahd runs
// on a fresh machine without one. It returns the path it used.
func LoadFromFlag(flagValue string) (Config, string, error) {
	path, explicit := Path(flagValue)
	cfg, err := Load(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		cfg, err = Default(), nil
	}
	if err != nil {
		return Config{}, path, err
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, path, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, path, nil
}

// Load reads and parses the file at path (at most MaxFileBytes). It
// does not validate. A missing file is an error wrapping fs.ErrNotExist.
func Load(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return Config{}, fmt.Errorf("read config %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return Config{}, fmt.Errorf("config %s: larger than %d bytes (MaxFileBytes): %w",
			path, MaxFileBytes, ErrInvalid)
	}
	cfg, err := Parse(data)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// Parse parses YAML over Default: absent and null keys keep
// their defaults, an empty document is all defaults. Unknown keys,
// duplicate keys, wrong types, durations without a unit and a second
// document are errors. It does not validate values.
func Parse(data []byte) (Config, error) {
	cfg := Default()
	if len(data) > MaxFileBytes {
		return cfg, fmt.Errorf("larger than %d bytes (MaxFileBytes): %w", MaxFileBytes, ErrInvalid)
	}
	// First pass: the tree, to name unknown keys by their path (yaml.v3's
	// own message names a Go type) and to catch "30" where a duration
	// belongs, which yaml.v3 reports without saying that a unit is missing.
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return cfg, nil // empty file or only comments
		}
		return cfg, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return cfg, fmt.Errorf("more than one YAML document (---): %w", ErrInvalid)
	}
	if err := checkKeys(&root, reflect.TypeOf(cfg), ""); err != nil {
		return cfg, err
	}
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return Default(), fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return cfg, nil
}

var (
	durationType = reflect.TypeOf(time.Duration(0))
	groupsType   = reflect.TypeOf(Groups{})
)

// UnmarshalYAML reads the groups section in either of its forms: a list of
// names (groups: [downstairs, all]), the other keys keeping their values,
// or a mapping of the keys (groups: {names: [all], lead: 1s}). A null
// names keeps the names as they were, like any other null key. yaml.v3
// does not hand KnownFields on to an unmarshaler, so the node is checked
// here as Parse checks the whole file: an unknown key is refused by name.
func (g *Groups) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, groupsType, "groups"); err != nil {
		return err
	}
	names := g.Names
	if n.Kind == yaml.SequenceNode {
		if err := n.Decode(&g.Names); err != nil {
			return fmt.Errorf("groups: %w", err)
		}
	} else {
		// plain has Groups' fields without this method, so Decode does not
		// come back here.
		type plain Groups
		if err := n.Decode((*plain)(g)); err != nil {
			return fmt.Errorf("groups: %w", err)
		}
	}
	if g.Names == nil {
		g.Names = names
	}
	return nil
}

// yamlBoolWords are the YAML 1.1 spellings of true and false that yaml.v3
// still decodes into a bool.
var yamlBoolWords = map[string]bool{"yes": true, "no": true, "on": true, "off": true, "y": true, "n": true}

// checkKeys walks n alongside the struct type t and reports the first key t
// has no field for, a repeated key, a section that is not a mapping, a
// value that is not a single value, and a duration written as a bare
// number. Besides better messages, it keeps yaml.v3's decoder from ever
// seeing a large mapping: its duplicate-key check is quadratic and builds
// one message per pair, seconds of CPU for a few thousand repeated keys.
func checkKeys(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		return checkKeys(n.Content[0], t, path)
	}
	where := path
	if where == "" {
		where = "config"
	}
	if n.Kind == yaml.AliasNode || n.ShortTag() == "!!null" {
		return nil // aliases point at nodes checked where they are defined
	}
	if t.Kind() == reflect.Slice {
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s: expected a list, found %s (line %d): %w",
				where, kindName(n.Kind), n.Line, ErrInvalid)
		}
		for i, item := range n.Content {
			if err := checkKeys(item, t.Elem(), fmt.Sprintf("%s[%d]", where, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if t.Kind() == reflect.Map {
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: expected a mapping, found %s (line %d): %w",
				where, kindName(n.Kind), n.Line, ErrInvalid)
		}
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("%s: keys must be names (line %d): %w", where, k.Line, ErrInvalid)
			}
			if line, dup := seen[k.Value]; dup {
				return fmt.Errorf("%s: key repeated (lines %d and %d): %w",
					joinPath(path, k.Value), line, k.Line, ErrInvalid)
			}
			seen[k.Value] = k.Line
			if err := checkKeys(v, t.Elem(), joinPath(path, k.Value)); err != nil {
				return err
			}
		}
		return nil
	}
	if t == groupsType && n.Kind != yaml.MappingNode {
		if n.Kind == yaml.SequenceNode {
			// groups: [a, b] is short for groups: {names: [a, b]}.
			return checkKeys(n, reflect.TypeOf(Groups{}.Names), joinPath(path, "names"))
		}
		return fmt.Errorf("%s: expected a list of group names or a mapping of keys (names, lead, max_late, clock_check, clock_probe), found %s (line %d): %w",
			where, kindName(n.Kind), n.Line, ErrInvalid)
	}
	if t.Kind() != reflect.Struct || t == durationType {
		if n.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s: expected a single value, found %s (line %d): %w",
				where, kindName(n.Kind), n.Line, ErrInvalid)
		}
		if t == durationType && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float") {
			return fmt.Errorf("%s: %q has no unit; write a duration such as \"30s\" or \"200ms\" (line %d): %w",
				where, n.Value, n.Line, ErrInvalid)
		}
		if t.Kind() == reflect.Bool && n.ShortTag() != "!!bool" && !yamlBoolWords[strings.ToLower(n.Value)] {
			return fmt.Errorf("%s: %q is not true or false (line %d): %w", where, n.Value, n.Line, ErrInvalid)
		}
		return nil // other wrong scalar types are left to the decoder's message
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: expected a mapping of keys, found %s (line %d): %w",
			where, kindName(n.Kind), n.Line, ErrInvalid)
	}
	fields := map[string]reflect.Type{}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = f.Type
		names = append(names, name)
	}
	seen := map[string]int{} // key → line
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		ft, ok := fields[k.Value]
		if !ok || k.Kind != yaml.ScalarNode {
			sort.Strings(names)
			return fmt.Errorf("%s: unknown key (line %d); known keys here: %s: %w",
				joinPath(path, k.Value), k.Line, strings.Join(names, ", "), ErrInvalid)
		}
		if line, dup := seen[k.Value]; dup {
			return fmt.Errorf("%s: key repeated (lines %d and %d): %w",
				joinPath(path, k.Value), line, k.Line, ErrInvalid)
		}
		seen[k.Value] = k.Line
		if err := checkKeys(v, ft, joinPath(path, k.Value)); err != nil {
			return err
		}
	}
	return nil
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a single value"
	}
	return "something else"
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
