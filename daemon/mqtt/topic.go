package mqtt

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxTopicLen is the longest topic or filter in bytes: MQTT encodes
// strings with a 16-bit length prefix.
const MaxTopicLen = 65535

// ValidateTopic checks a topic name to publish to: 1..MaxTopicLen bytes
// of valid UTF-8 without NUL and without the wildcards + and #.
func ValidateTopic(topic string) error {
	if err := validateTopicString(topic); err != nil {
		return err
	}
	if strings.ContainsAny(topic, "+#") {
		return fmt.Errorf("%w: %q: wildcards are not allowed in a topic name", ErrInvalidTopic, truncate(topic))
	}
	return nil
}

// ValidateFilter checks a subscription filter: the rules of ValidateTopic,
// except that + may stand for one whole level and # for the whole last
// level. A shared subscription, $share/<group>/<filter>, needs a group
// without wildcards and a filter after it.
func ValidateFilter(filter string) error {
	if err := validateTopicString(filter); err != nil {
		return err
	}
	if rest, ok := strings.CutPrefix(filter, sharePrefix); ok {
		group, f, _ := strings.Cut(rest, "/")
		switch {
		case group == "" || strings.ContainsAny(group, "+#"):
			return fmt.Errorf("%w: %q: a shared subscription needs a group name without wildcards", ErrInvalidTopic, truncate(filter))
		case f == "":
			return fmt.Errorf("%w: %q: a shared subscription needs a filter after its group", ErrInvalidTopic, truncate(filter))
		}
	}
	rest := filter
	for {
		level, after, more := strings.Cut(rest, "/")
		switch {
		case level == "#" && more:
			return fmt.Errorf("%w: %q: # must be the last level", ErrInvalidTopic, truncate(filter))
		case level != "#" && level != "+" && strings.ContainsAny(level, "+#"):
			return fmt.Errorf("%w: %q: a wildcard must fill a whole level", ErrInvalidTopic, truncate(filter))
		}
		if !more {
			return nil
		}
		rest = after
	}
}

func validateTopicString(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: empty", ErrInvalidTopic)
	case len(s) > MaxTopicLen:
		return fmt.Errorf("%w: %d bytes is over MaxTopicLen (%d)", ErrInvalidTopic, len(s), MaxTopicLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %q: invalid UTF-8", ErrInvalidTopic, truncate(s))
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%w: %q: contains NUL", ErrInvalidTopic, truncate(s))
	}
	return nil
}

// sharePrefix starts a shared subscription's filter (MQTT 5 section
// 4.8.2, which Mosquitto 2 and EMQX serve to MQTT 3.1.1 clients too).
const sharePrefix = "$share/"

// topicFilter returns the part of a valid filter that topics are matched
// against: a shared subscription's messages come with their topic as
// published, without "$share/<group>/" (paho's router strips it too, but
// this package routes by itself).
func topicFilter(filter string) string {
	rest, ok := strings.CutPrefix(filter, sharePrefix)
	if !ok {
		return filter
	}
	_, f, _ := strings.Cut(rest, "/")
	return f
}

// matchTopic reports whether a valid filter matches a valid topic name.
// Per MQTT 3.1.1 section 4.7.2, a filter starting with a wildcard does not
// match topics starting with $ (broker-internal topics such as $SYS), and
// "a/#" also matches "a".
func matchTopic(filter, topic string) bool {
	if strings.HasPrefix(topic, "$") && (strings.HasPrefix(filter, "+") || strings.HasPrefix(filter, "#")) {
		return false
	}
	for {
		f, frest, fmore := strings.Cut(filter, "/")
		if f == "#" {
			return true
		}
		t, trest, tmore := strings.Cut(topic, "/")
		if f != "+" && f != t {
			return false
		}
		switch {
		case !fmore && !tmore:
			return true
		case !tmore:
			// The topic ended; only a trailing "/#" may still match it.
			return frest == "#"
		case !fmore:
			return false
		}
		filter, topic = frest, trest
	}
}

// truncate keeps error messages readable when a hostile topic is huge.
func truncate(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
