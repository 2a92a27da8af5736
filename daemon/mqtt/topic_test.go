package mqtt

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateTopicAndFilter(t *testing.T) {
	for _, tt := range []struct {
		s             string
		topic, filter bool // valid as a topic name / as a filter
	}{
		{"mynah/n/say", true, true},
		{"/", true, true},
		{"a//b", true, true},
		{"$SYS/x", true, true},
		{"mynah/n/u/ann cooper/say", true, true},
		{"é/日本", true, true},
		{"mynah/+/say", false, true},
		{"mynah/#", false, true},
		{"#", false, true},
		{"+", false, true},
		{"+/+/#", false, true},
		{"", false, false},
		{"mynah/#/say", false, false},
		{"mynah/x#", false, false},
		{"mynah/x+/say", false, false},
		{"mynah/+x", false, false},
		{"##", false, false},
		{"a\x00b", false, false},
		{"a\xffb", false, false},
		// Shared subscriptions: a group without wildcards, then a filter.
		{"$share/mynah-render/mynah/render/req", true, true},
		{"$share/g/mynah/+/say", false, true},
		{"$share/g/#", false, true},
		{"$share/g", true, false},
		{"$share/g/", true, false},
		{"$share//a", true, false},
		{"$share/+/a", false, false},
		{"$share/g#/a", false, false},
		{strings.Repeat("a", MaxTopicLen), true, true},
		{strings.Repeat("a", MaxTopicLen+1), false, false},
	} {
		if err := ValidateTopic(tt.s); (err == nil) != tt.topic || (err != nil && !errors.Is(err, ErrInvalidTopic)) {
			t.Errorf("ValidateTopic(%.20q) = %v, want valid=%v", tt.s, err, tt.topic)
		}
		if err := ValidateFilter(tt.s); (err == nil) != tt.filter || (err != nil && !errors.Is(err, ErrInvalidTopic)) {
			t.Errorf("ValidateFilter(%.20q) = %v, want valid=%v", tt.s, err, tt.filter)
		}
	}
}

func TestMatchTopic(t *testing.T) {
	// Cases from MQTT 3.1.1 section 4.7 and around.
	for _, tt := range []struct {
		filter, topic string
		want          bool
	}{
		{"sport/tennis/player1/#", "sport/tennis/player1", true},
		{"sport/tennis/player1/#", "sport/tennis/player1/ranking", true},
		{"sport/tennis/player1/#", "sport/tennis/player1/score/wimbledon", true},
		{"sport/#", "sport", true},
		{"#", "sport/tennis", true},
		{"sport/tennis/+", "sport/tennis/player1", true},
		{"sport/tennis/+", "sport/tennis/player1/ranking", false},
		{"sport/+", "sport", false},
		{"sport/+", "sport/", true},
		{"+/+", "/finance", true},
		{"/+", "/finance", true},
		{"+", "/finance", false},
		{"+", "a", true},
		{"+/#", "a", true},
		{"a/b", "a/b", true},
		{"a/b", "a/b/c", false},
		{"a/b/c", "a/b", false},
		{"a/b", "a/c", false},
		{"a/+/c", "a//c", true},
		{"a//c", "a//c", true},
		{"mynah/n/u/+/say", "mynah/n/u/ann/say", true},
		{"mynah/n/u/+/say", "mynah/n/say", false},
		{"#", "$SYS/broker", false},
		{"+/broker", "$SYS/broker", false},
		{"$SYS/#", "$SYS/broker", true},
		{"$SYS/+", "$SYS/broker", true},
	} {
		if got := matchTopic(tt.filter, tt.topic); got != tt.want {
			t.Errorf("matchTopic(%q, %q) = %v, want %v", tt.filter, tt.topic, got, tt.want)
		}
	}
}

// A shared subscription's messages carry the topic as published: the
// subscription matches them by the filter after "$share/<group>/".
func TestSharedSubscriptionMatches(t *testing.T) {
	for _, tt := range []struct {
		filter, topic string
		want          bool
	}{
		{"$share/mynah-render/mynah/render/req", "mynah/render/req", true},
		{"$share/mynah-render/mynah/render/req", "$share/mynah-render/mynah/render/req", false},
		{"$share/mynah-render/mynah/render/req", "mynah/render/reply/x", false},
		{"$share/g/mynah/+/say", "mynah/kitchen/say", true},
		{"$share/g/#", "a/b", true},
		{"$share/g/#", "$SYS/x", false},
		{"mynah/render/req", "mynah/render/req", true},
	} {
		if err := ValidateFilter(tt.filter); err != nil {
			t.Fatal(err)
		}
		s := &subscription{filters: []string{tt.filter}}
		if got := s.matches(tt.topic); got != tt.want {
			t.Errorf("%q matches %q = %v, want %v", tt.filter, tt.topic, got, tt.want)
		}
	}
}

// FuzzMatchTopic checks properties that must hold for every valid topic
// and filter the broker or a config can produce.
func FuzzMatchTopic(f *testing.F) {
	for _, s := range [][2]string{
		{"mynah/+/say", "mynah/n/say"},
		{"#", "$SYS/x"},
		{"a/#", "a"},
		{"+/+", "/"},
		{"a//b", "a//b"},
		{"", ""},
		{"é/+", "é/\x00"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, filter, topic string) {
		fErr := ValidateFilter(filter)
		tErr := ValidateTopic(topic)
		if ValidateTopic(filter) == nil && fErr != nil && !strings.HasPrefix(filter, sharePrefix) {
			t.Fatalf("%q is a valid topic but not a valid filter: %v", filter, fErr)
		}
		if fErr != nil || tErr != nil {
			return
		}
		got := matchTopic(filter, topic)
		if !strings.ContainsAny(filter, "+#") && got != (filter == topic) {
			t.Fatalf("matchTopic(%q, %q) = %v without wildcards", filter, topic, got)
		}
		if !matchTopic(topic, topic) {
			t.Fatalf("topic %q does not match itself", topic)
		}
		// Replacing every level of a topic with + matches it, unless it
		// starts with $.
		levels := strings.Split(topic, "/")
		plus := strings.TrimSuffix(strings.Repeat("+/", len(levels)), "/")
		if want := !strings.HasPrefix(topic, "$"); matchTopic(plus, topic) != want {
			t.Fatalf("matchTopic(%q, %q) != %v", plus, topic, want)
		}
		if want := !strings.HasPrefix(topic, "$"); matchTopic("#", topic) != want {
			t.Fatalf("matchTopic(#, %q) != %v", topic, want)
		}
		// A filter and its extension by /# agree on the topics the filter
		// matches.
		if got && ValidateFilter(filter+"/#") == nil && !strings.HasSuffix(filter, "#") && !matchTopic(filter+"/#", topic) {
			t.Fatalf("%q matches %q but %q does not", filter, topic, filter+"/#")
		}
	})
}
