package daemon

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

// haSchema is what Home Assistant's MQTT integration accepts in a
// device-based discovery payload, for the platforms mynah uses. A test-only
// table, written from Home Assistant core's sources
// (homeassistant/components/mqtt/): abbreviations.py (the key names and
// their short forms), schemas.py and entity.py (MQTT_ENTITY_COMMON_SCHEMA,
// availability, device and origin), and each platform's PLATFORM_SCHEMA
// (notify.py, number.py, button.py, sensor.py, select.py, event.py,
// binary_sensor.py), plus the device-discovery rules of its MQTT docs: the
// shared options at the top level, "p" in every component, and a
// component with only "p" removing that entity. Keys are the long names;
// mynah writes no abbreviations except those required (p, dev, o, cmps)
// and the device's.
var haSchema = struct {
	top, device, origin, common []string
	platforms                   map[string]struct{ required, optional []string }
}{
	top:    []string{"dev", "o", "cmps", "availability_topic", "payload_available", "payload_not_available", "qos", "state_topic", "command_topic", "encoding"},
	device: []string{"ids", "name", "mf", "mdl", "sw", "hw", "sn", "cu", "sa", "via_device"},
	origin: []string{"name", "sw", "url"},
	common: []string{"p", "unique_id", "default_entity_id", "name", "icon", "entity_category", "qos", "enabled_by_default",
		"json_attributes_topic", "json_attributes_template", "availability_topic", "entity_picture", "encoding"},
	platforms: map[string]struct{ required, optional []string }{
		"notify": {[]string{"command_topic"}, []string{"command_template", "retain"}},
		"number": {[]string{"command_topic"}, []string{"command_template", "state_topic", "value_template", "min", "max", "step",
			"mode", "unit_of_measurement", "device_class", "optimistic", "payload_reset", "retain"}},
		"button": {[]string{"command_topic"}, []string{"payload_press", "device_class", "retain"}},
		"sensor": {[]string{"state_topic"}, []string{"value_template", "device_class", "state_class", "unit_of_measurement",
			"options", "expire_after", "force_update", "last_reset_value_template", "suggested_display_precision"}},
		"select":        {[]string{"command_topic", "options"}, []string{"command_template", "state_topic", "value_template", "optimistic", "retain"}},
		"event":         {[]string{"state_topic", "event_types"}, []string{"value_template", "device_class"}},
		"binary_sensor": {[]string{"state_topic"}, []string{"value_template", "payload_on", "payload_off", "device_class", "expire_after", "force_update", "off_delay"}},
	},
}

// TestDiscoveryMatchesHomeAssistantSchema checks every key of the payload,
// with and without the optional parts, and of a group's payload, against
// haSchema: no key Home Assistant would reject, every required key
// present, qos 1 in every component (older Home Assistant ignores the
// device-level one), unique ids unique, and stubs only for components
// that can go away.
func TestDiscoveryMatchesHomeAssistantSchema(t *testing.T) {
	c := newCacheRec()
	for _, tc := range []struct {
		name   string
		modify func(*Options)
		voices []string
		group  string // the document of this group instead of the node's
	}{
		{"full", func(o *Options) {
			o.Cache = &c.fake
			o.Audio = func() AudioStatus { return AudioStatus{Available: true} }
		}, []string{"alice", "bob"}, ""},
		{"bare", nil, nil, ""},
		{"group", nil, nil, "Down-stairs_2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := newHarness(t, tc.modify).d.discoveryPayload(tc.voices)
			if tc.group != "" {
				b, err = groupDiscoveryPayload(tc.group)
			}
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]json.RawMessage
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			checkKeys(t, "payload", doc, haSchema.top, []string{"dev", "o", "cmps"})
			var dev, origin map[string]json.RawMessage
			json.Unmarshal(doc["dev"], &dev)
			json.Unmarshal(doc["o"], &origin)
			checkKeys(t, "dev", dev, haSchema.device, []string{"ids", "name"})
			checkKeys(t, "o", origin, haSchema.origin, []string{"name"})

			var cmps map[string]map[string]json.RawMessage
			if err := json.Unmarshal(doc["cmps"], &cmps); err != nil {
				t.Fatal(err)
			}
			ids := map[string]string{}
			for key, cmp := range cmps {
				var platform string
				json.Unmarshal(cmp["p"], &platform)
				schema, ok := haSchema.platforms[platform]
				if !ok {
					t.Errorf("component %s: platform %q is not in the table", key, platform)
					continue
				}
				if len(cmp) == 1 {
					if optionalComponents[key] != platform {
						t.Errorf("component %s is a removal stub but cannot go away", key)
					}
					continue
				}
				checkKeys(t, "component "+key, cmp, append(slices.Clone(haSchema.common), append(schema.required, schema.optional...)...),
					append([]string{"p", "unique_id", "name"}, schema.required...))
				if string(cmp["qos"]) != "1" {
					t.Errorf("component %s: qos %s, want 1 in every component", key, cmp["qos"])
				}
				var id string
				json.Unmarshal(cmp["unique_id"], &id)
				if other, dup := ids[id]; dup {
					t.Errorf("components %s and %s share unique_id %q", key, other, id)
				}
				ids[id] = key
			}
		})
	}
}

// checkKeys reports keys of m outside allowed and required keys missing.
func checkKeys(t *testing.T, where string, m map[string]json.RawMessage, allowed, required []string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(allowed, k) {
			t.Errorf("%s: key %q is not one Home Assistant accepts here", where, k)
		}
	}
	for _, k := range required {
		if _, ok := m[k]; !ok {
			t.Errorf("%s: required key %q missing", where, k)
		}
	}
}
