package daemon

import (
	"context"
	"encoding/json"
	"strings"
)

// Home Assistant device-based discovery: one retained JSON document on
// <prefix>/device/<node>/config describes the device and all its entities
// ("cmps"). Availability at the top level applies to every component; qos
// is repeated in each, since Home Assistant before core 2026.5.2 did not
// pass the device-level qos on (every entity then published at QoS 0). A
// component that no longer exists is sent as {"p": platform}, the only
// way to remove it: left out, Home Assistant keeps it.

// The fields with omitempty that a node's document always fills in are
// left out of a group's (groupDiscoveryPayload).

type haDevice struct {
	IDs          []string `json:"ids"`
	Name         string   `json:"name"`
	Manufacturer string   `json:"mf"`
	Model        string   `json:"mdl,omitempty"`
	SWVersion    string   `json:"sw,omitempty"`
}

type haOrigin struct {
	Name      string `json:"name"`
	SWVersion string `json:"sw,omitempty"`
	URL       string `json:"url,omitempty"`
}

type haComponent struct {
	Platform        string   `json:"p"`
	UniqueID        string   `json:"unique_id,omitempty"`
	DefaultEntityID string   `json:"default_entity_id,omitempty"`
	Name            string   `json:"name,omitempty"`
	QoS             int      `json:"qos,omitempty"`
	Icon            string   `json:"icon,omitempty"`
	EntityCategory  string   `json:"entity_category,omitempty"`
	CommandTopic    string   `json:"command_topic,omitempty"`
	CommandTemplate string   `json:"command_template,omitempty"`
	PayloadPress    string   `json:"payload_press,omitempty"`
	StateTopic      string   `json:"state_topic,omitempty"`
	ValueTemplate   string   `json:"value_template,omitempty"`
	Options         []string `json:"options,omitempty"`
	DeviceClass     string   `json:"device_class,omitempty"`
	StateClass      string   `json:"state_class,omitempty"`
	Min             *float64 `json:"min,omitempty"`
	Max             *float64 `json:"max,omitempty"`
	Step            *float64 `json:"step,omitempty"`
	Mode            string   `json:"mode,omitempty"`
	Unit            string   `json:"unit_of_measurement,omitempty"`
	EventTypes      []string `json:"event_types,omitempty"`
	// JSONAttributesTopic and JSONAttributesTemplate give an entity
	// attributes beside its state.
	JSONAttributesTopic    string `json:"json_attributes_topic,omitempty"`
	JSONAttributesTemplate string `json:"json_attributes_template,omitempty"`
}

// Templates Home Assistant renders (Jinja) on mynah's JSON. Its event
// entity ignores a template that renders "{}" and refuses (logs "Invalid
// event type") an event_type outside the entity's event_types
// (homeassistant/components/mqtt/event.py), so each event entity's
// template picks its own events out of mynah/<node>/event.
const (
	// requestEventTemplate turns a say request's terminal event into the
	// Request entity's payload. A command's event carries the command's
	// name (Event.Command), a say's never: a failed cache/purge is not a
	// failed request.
	requestEventTemplate = `{% if value_json.state in ['finished', 'failed', 'dropped'] and value_json.command is not defined %}` +
		`{"event_type": {{ value_json.state | to_json }}, "id": {{ value_json.id | default('') | to_json }}, ` +
		`"reason": {{ value_json.reason | default('') | to_json }}, "error": {{ value_json.error | default('') | to_json }}, ` +
		`"redelivered": {{ value_json.redelivered | default(false) | to_json }}}` +
		`{% else %}{}{% endif %}`
	// commandEventTemplate turns a control command's done or failed event
	// (cache/purge, speaker/enroll, speaker/forget, voice/set,
	// volume/set, voices/reload, voice/install: the voice installed) into
	// the Command entity's payload.
	commandEventTemplate = `{% if value_json.state in ['done', 'failed'] and value_json.command is defined %}` +
		`{"event_type": {{ value_json.state | to_json }}, "command": {{ value_json.command | to_json }}, ` +
		`"id": {{ value_json.id | default('') | to_json }}, "owner": {{ value_json.owner | default('') | to_json }}, ` +
		`"speaker": {{ value_json.speaker | default('') | to_json }}, "voice": {{ value_json.voice | default('') | to_json }}, ` +
		`"reason": {{ value_json.reason | default('') | to_json }}, "error": {{ value_json.error | default('') | to_json }}, ` +
		`"scope": {{ value_json.scope | default('') | to_json }}, "removed": {{ value_json.removed | default(none) | to_json }}, ` +
		`"redelivered": {{ value_json.redelivered | default(false) | to_json }}}` +
		`{% else %}{}{% endif %}`
	lastErrorTemplate      = `{{ value_json.last_error.reason if value_json.last_error is defined else 'none' }}`
	audioProblemTemplate   = `{{ 'ON' if value_json.audio is defined and not value_json.audio.available else 'OFF' }}`
	lastErrorAttrsTemplate = `{{ value_json.last_error | default({}) | to_json }}`
)

// The event entities' types: the terminal states of a say request, and
// the outcomes of a control command.
var (
	haRequestEventTypes = []string{EventFinished, EventFailed, EventDropped}
	haCommandEventTypes = []string{EventDone, EventFailed}
)

// optionalComponents are the components that exist only with a cache or
// with voices, by key and platform: removed with a stub when absent.
var optionalComponents = map[string]string{
	"cache_hit_ratio": "sensor", "cache_size": "sensor", "cache_entries": "sensor",
	"cache_purge": "button", "voice": "select", "audio": "binary_sensor",
}

type haDiscovery struct {
	Device              haDevice               `json:"dev"`
	Origin              haOrigin               `json:"o"`
	AvailabilityTopic   string                 `json:"availability_topic,omitempty"`
	PayloadAvailable    string                 `json:"payload_available,omitempty"`
	PayloadNotAvailable string                 `json:"payload_not_available,omitempty"`
	QoS                 int                    `json:"qos"`
	Components          map[string]haComponent `json:"cmps"`
}

func ptr(v float64) *float64 { return &v }

// discoveryPayload builds the discovery document for the given voices.
func (d *Daemon) discoveryPayload(voices []string) ([]byte, error) {
	node, t := d.opts.Node, &d.topics
	version := d.opts.Version
	if version == "" {
		version = "dev"
	}
	name := "mynah"
	if node != DefaultNode {
		name += " " + node
	}
	// entity ids are lowercase with underscores; node may have capitals
	// and dashes.
	slug := "mynah_" + strings.ToLower(strings.ReplaceAll(node, "-", "_"))
	cmp := func(platform, what, label string) haComponent {
		return haComponent{
			Platform:        platform,
			UniqueID:        "mynah_" + node + "_" + what,
			DefaultEntityID: platform + "." + slug + "_" + what,
			Name:            label,
			QoS:             1,
		}
	}

	say := cmp("notify", "say", "Say")
	say.Icon = sayIcon
	say.CommandTopic = t.say

	volume := cmp("number", "volume", "Volume")
	volume.Icon = "mdi:volume-high"
	volume.CommandTopic = t.volume
	// The % makes the value unambiguous for ParseVolume: a bare "1" means
	// full volume, "1%" one percent.
	volume.CommandTemplate = "{{ value }}%"
	volume.StateTopic = t.state
	volume.ValueTemplate = "{{ (value_json.volume * 100) | round(0) }}"
	volume.Min, volume.Max, volume.Step = ptr(0), ptr(100), ptr(1)
	volume.Mode = "slider"
	volume.Unit = "%"

	stop := cmp("button", "stop", "Stop")
	stop.Icon = "mdi:stop"
	stop.CommandTopic = t.stop

	state := cmp("sensor", "state", "State")
	state.StateTopic = t.state
	state.ValueTemplate = "{{ value_json.state }}"
	state.DeviceClass = "enum"
	state.Options = []string{"idle", "speaking"}

	queue := cmp("sensor", "queue", "Queue length")
	queue.Icon = "mdi:tray-full"
	queue.EntityCategory = "diagnostic"
	queue.StateTopic = t.state
	queue.ValueTemplate = "{{ value_json.queue }}"
	queue.StateClass = "measurement"

	reload := cmp("button", "voices_reload", "Reload voices")
	reload.Icon = "mdi:folder-refresh"
	reload.EntityCategory = "config"
	reload.CommandTopic = t.reload

	requests := cmp("event", "request", "Request")
	requests.Icon = "mdi:message-badge"
	requests.StateTopic = t.event
	requests.ValueTemplate = requestEventTemplate
	requests.EventTypes = haRequestEventTypes

	commands := cmp("event", "command", "Command")
	commands.Icon = "mdi:console-line"
	commands.EntityCategory = "diagnostic"
	commands.StateTopic = t.event
	commands.ValueTemplate = commandEventTemplate
	commands.EventTypes = haCommandEventTypes

	lastErr := cmp("sensor", "last_error", "Last error")
	lastErr.Icon = "mdi:alert-circle-outline"
	lastErr.EntityCategory = "diagnostic"
	lastErr.StateTopic = t.state
	lastErr.ValueTemplate = lastErrorTemplate
	lastErr.JSONAttributesTopic = t.state
	lastErr.JSONAttributesTemplate = lastErrorAttrsTemplate

	cmps := map[string]haComponent{"say": say, "volume": volume, "stop": stop, "state": state, "queue": queue,
		"request": requests, "command": commands, "last_error": lastErr, "voices_reload": reload}
	if d.opts.Cache != nil {
		// The state carries a cache object only with a cache; the
		// templates assume it.
		ratio := cmp("sensor", "cache_hit_ratio", "Phrase cache hit ratio")
		ratio.Icon = "mdi:cached"
		ratio.EntityCategory = "diagnostic"
		ratio.StateTopic = t.state
		ratio.ValueTemplate = "{{ (value_json.cache.hit_ratio * 100) | round(1) }}"
		ratio.StateClass = "measurement"
		ratio.Unit = "%"

		size := cmp("sensor", "cache_size", "Phrase cache size")
		size.EntityCategory = "diagnostic"
		size.StateTopic = t.state
		size.ValueTemplate = "{{ value_json.cache.bytes }}"
		size.DeviceClass = "data_size"
		size.StateClass = "measurement"
		size.Unit = "B"

		entries := cmp("sensor", "cache_entries", "Phrases cached")
		entries.Icon = "mdi:playlist-music"
		entries.EntityCategory = "diagnostic"
		entries.StateTopic = t.state
		entries.ValueTemplate = "{{ value_json.cache.entries }}"
		entries.StateClass = "measurement"

		purge := cmp("button", "cache_purge", "Purge phrase cache")
		purge.Icon = "mdi:delete-sweep"
		purge.EntityCategory = "config"
		purge.CommandTopic = t.purge
		purge.PayloadPress = "phrases"

		cmps["cache_hit_ratio"], cmps["cache_size"], cmps["cache_entries"], cmps["cache_purge"] = ratio, size, entries, purge
	}
	if d.opts.Audio != nil {
		// A device that can go away (not a file, not null).
		problem := cmp("binary_sensor", "audio", "Audio device")
		problem.DeviceClass = "problem"
		problem.EntityCategory = "diagnostic"
		problem.StateTopic = t.state
		problem.ValueTemplate = audioProblemTemplate
		cmps["audio"] = problem
	}
	// A select needs at least one option; without voices there is nothing
	// to choose.
	if len(voices) > 0 {
		voice := cmp("select", "voice", "Voice")
		voice.Icon = "mdi:account-music"
		voice.CommandTopic = t.voice
		voice.StateTopic = t.state
		voice.ValueTemplate = "{{ value_json.voice }}"
		voice.Options = voices
		cmps["voice"] = voice
	}
	for key, platform := range optionalComponents {
		if _, ok := cmps[key]; !ok {
			cmps[key] = haComponent{Platform: platform}
		}
	}

	return json.Marshal(haDiscovery{
		Device: haDevice{IDs: []string{"mynah_" + node}, Name: name, Manufacturer: "mynah",
			Model: d.opts.Model, SWVersion: version},
		Origin:              haOrigin{Name: "mynah", SWVersion: version, URL: projectURL},
		AvailabilityTopic:   t.status,
		PayloadAvailable:    "online",
		PayloadNotAvailable: "offline",
		QoS:                 1,
		Components:          cmps,
	})
}

const (
	sayIcon    = "mdi:account-voice"
	projectURL = "https://github.com/mynah-tts/mynah"
)

// Each group is a device of its own in Home Assistant, "mynah group
// <group>", with one notify entity that says a message on the group's say
// topic, so that an automation can speak to the whole group at once.
// Every member publishes the group's document, retained, with its own (at
// start, on Home Assistant's birth message, after a reconnect), and every
// member's is byte-identical: no member's node, version or model is in it,
// and no availability either, since the entity works while any member is
// up. So whichever member published last, the retained document is the
// same, and Home Assistant, which ignores a discovery payload equal to the
// one it has, sees a single unchanging device.
//
// No member removes it: not when it stops, nor when it is unregistered or
// leaves the group, since the other members may still serve the group, and
// a member cannot know whether any is left. A group that is gone for good
// is removed by hand, with an empty retained payload on its topic.

// GroupDiscoveryTopic is a group's retained device discovery topic:
// <prefix>/device/mynah_group_<group>/config.
func GroupDiscoveryTopic(prefix, group string) string {
	return DiscoveryTopic(prefix, groupDeviceID(group))
}

func groupDeviceID(group string) string { return "mynah_group_" + group }

// groupDiscoveryPayload is group's discovery document: the same for every
// member, so made of the group's name alone.
func groupDiscoveryPayload(group string) ([]byte, error) {
	id := groupDeviceID(group)
	// entity ids are lowercase with underscores; a group name may have
	// capitals and dashes.
	slug := strings.ToLower(strings.ReplaceAll(id, "-", "_"))
	// The node's notify entity, on the group's say topic.
	say := haComponent{
		Platform:        "notify",
		UniqueID:        id + "_say",
		DefaultEntityID: "notify." + slug + "_say",
		Name:            "Say",
		QoS:             1,
		Icon:            sayIcon,
		CommandTopic:    GroupTopic(group, groupSay),
	}
	return json.Marshal(haDiscovery{
		Device:     haDevice{IDs: []string{id}, Name: "mynah group " + group, Manufacturer: "mynah"},
		Origin:     haOrigin{Name: "mynah", URL: projectURL},
		QoS:        1,
		Components: map[string]haComponent{"say": say},
	})
}

// publishDiscovery refreshes the voice list (new voices show up in the
// select, and a default voice that is gone is replaced) and publishes the
// retained discovery document, and those of the node's groups.
func (d *Daemon) publishDiscovery(ctx context.Context) {
	voices := d.opts.Engine.Voices()
	d.mu.Lock()
	d.setVoicesLocked(voices) // the state published next follows
	d.mu.Unlock()
	b, err := d.discoveryPayload(voices)
	if err != nil {
		d.log.Error("encode discovery", "err", err)
		return
	}
	d.publish(ctx, d.topics.discovery, b, true)
	for _, g := range d.opts.Groups {
		b, err := groupDiscoveryPayload(g)
		if err != nil {
			d.log.Error("encode group discovery", "group", g, "err", err)
			continue
		}
		d.publish(ctx, GroupDiscoveryTopic(d.opts.DiscoveryPrefix, g), b, true)
	}
}
