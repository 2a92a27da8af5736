package daemon

import (
	"strings"
)

// topics are the daemon's MQTT topics, fixed at New.
type topics struct {
	base, say, ownerPrefix, stop, volume, voice, purge string
	enroll, forget, reload, install                    string
	event, state, status, haStatus, discovery          string
}

func newTopics(node, prefix string) topics {
	base := "mynah/" + node
	return topics{
		base: base, say: base + "/say", ownerPrefix: base + "/u/",
		stop: base + "/stop", volume: base + "/volume/set", voice: base + "/voice/set",
		purge: base + "/cache/purge", event: base + "/event", state: base + "/state",
		enroll: base + "/speaker/enroll", forget: base + "/speaker/forget", reload: base + "/voices/reload",
		install: base + "/voice/install",
		status:  StatusTopic(node), haStatus: prefix + "/status",
		discovery: DiscoveryTopic(prefix, node),
	}
}

// StatusTopic is where the transport keeps the retained online/offline
// availability (its last will): mynah/<node>/status.
func StatusTopic(node string) string { return "mynah/" + node + "/status" }

// DiscoveryTopic is the retained device discovery topic:
// <prefix>/device/<node>/config.
func DiscoveryTopic(prefix, node string) string { return prefix + "/device/" + node + "/config" }

// filters are the subscriptions: the command topics and Home Assistant's
// birth topic.
func (t *topics) filters() []string {
	return []string{t.say, t.ownerPrefix + "+/say", t.stop, t.volume, t.voice, t.purge,
		t.enroll, t.forget, t.ownerPrefix + "+/speaker/enroll", t.ownerPrefix + "+/speaker/forget", t.reload, t.install, t.haStatus}
}

// Commands an owner's topics take: mynah/<node>/u/<owner>/<command>.
const (
	cmdSay    = "say"
	cmdEnroll = "speaker/enroll"
	cmdForget = "speaker/forget"
)

// owner splits mynah/<node>/u/<owner>/<command> for the commands above.
func (t *topics) owner(topic string) (owner, command string, ok bool) {
	rest, ok := strings.CutPrefix(topic, t.ownerPrefix)
	if !ok {
		return "", "", false
	}
	owner, command, ok = strings.Cut(rest, "/")
	if !ok || owner == "" {
		return "", "", false
	}
	switch command {
	case cmdSay, cmdEnroll, cmdForget:
		return owner, command, true
	}
	return "", "", false
}
