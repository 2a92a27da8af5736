package render

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"unicode/utf8"
)

// Render nodes' own topics, under NodePrefix and the node's name:
//
//	mynah/render/node/<node>/req     requests for this node only
//	mynah/render/node/<node>/status  "online" or "offline", retained (its connection's will)
//	mynah/render/node/<node>/voices  its catalog, retained (EncodeCatalog)
//
// Requesters follow the status and catalog topics (NodeFilters) and send
// each sentence to the live node that owns its phrase key by rendezvous
// hashing (Owners): every requester that sees the same nodes picks the
// same one, so the fleet synthesizes a sentence once whichever speakers
// ask for it. The shared subscription (ServeFilter) stays the way in when
// a requester knows no node yet, and for the last try.
const (
	NodePrefix   = "mynah/render/node/"
	NodeRequest  = "req"
	NodeStatus   = "status"
	NodeVoices   = "voices"
	StatusOnline = "online"
	// MaxNodes bounds how many render nodes a Client follows; the
	// statuses of more are ignored.
	MaxNodes = 256
	// MaxCatalogBytes bounds a catalog payload, MaxCatalogVoices its
	// voices and MaxCatalogSpeakers one voice's speaker names.
	MaxCatalogBytes    = 64 << 10
	MaxCatalogVoices   = 256
	MaxCatalogSpeakers = 1024
)

// NodeTopic returns one of node's topics (leaf NodeRequest, NodeStatus
// or NodeVoices); node must be a valid reply level (ValidateNode).
func NodeTopic(node, leaf string) string { return NodePrefix + node + "/" + leaf }

// NodeFilters are what a requester subscribes to follow the render
// nodes.
var NodeFilters = []string{NodePrefix + "+/" + NodeStatus, NodePrefix + "+/" + NodeVoices}

// ValidateNode checks a render node's name: the rule of a reply level
// (ValidateReply), so it is one topic level without wildcards.
func ValidateNode(node string) error {
	if err := ValidateReply(ReplyPrefix + node); err != nil {
		return fmt.Errorf("render node name: %w", err)
	}
	return nil
}

// nodeOf splits a node topic into the node and its leaf; ok is false for
// anything else (a bad name included).
func nodeOf(topic string) (node, leaf string, ok bool) {
	rest, found := strings.CutPrefix(topic, NodePrefix)
	if !found {
		return "", "", false
	}
	node, leaf, found = strings.Cut(rest, "/")
	if !found || strings.Contains(leaf, "/") || ValidateNode(node) != nil {
		return "", "", false
	}
	return node, leaf, true
}

// Catalog is what a render node publishes, retained, on its NodeVoices
// topic: the voices it renders.
type Catalog struct {
	Voices []CatalogVoice `json:"voices"`
}

// CatalogVoice is one voice of a Catalog.
type CatalogVoice struct {
	Name       string   `json:"name"`
	Language   string   `json:"language,omitempty"`
	SampleRate int      `json:"sample_rate,omitempty"`
	Speakers   []string `json:"speakers,omitempty"`
}

// EncodeCatalog validates c and returns its payload.
func EncodeCatalog(c Catalog) ([]byte, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidCatalog, err)
	}
	out := bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
	if len(out) > MaxCatalogBytes {
		return nil, fmt.Errorf("%w: %w: %d bytes encoded is over MaxCatalogBytes (%d)", ErrInvalidCatalog, ErrTooLarge, len(out), MaxCatalogBytes)
	}
	return out, nil
}

// DecodeCatalog decodes and validates a catalog payload (outside input:
// any node may publish one). Unknown fields are ignored.
func DecodeCatalog(payload []byte) (Catalog, error) {
	if len(payload) > MaxCatalogBytes {
		return Catalog{}, fmt.Errorf("%w: %w: %d bytes is over MaxCatalogBytes (%d)", ErrInvalidCatalog, ErrTooLarge, len(payload), MaxCatalogBytes)
	}
	if !utf8.Valid(payload) {
		return Catalog{}, fmt.Errorf("%w: not UTF-8", ErrInvalidCatalog)
	}
	var c Catalog
	if err := json.Unmarshal(payload, &c); err != nil {
		return Catalog{}, fmt.Errorf("%w: %w", ErrInvalidCatalog, err)
	}
	if err := c.validate(); err != nil {
		return Catalog{}, err
	}
	return c, nil
}

func (c *Catalog) validate() error {
	if len(c.Voices) > MaxCatalogVoices {
		return fmt.Errorf("%w: %w: %d voices is over MaxCatalogVoices (%d)", ErrInvalidCatalog, ErrTooLarge, len(c.Voices), MaxCatalogVoices)
	}
	for i, v := range c.Voices {
		if err := validateName(v.Name); err != nil {
			return fmt.Errorf("%w: voice %d: %w", ErrInvalidCatalog, i+1, err)
		}
		if len(v.Language) > MaxNameBytes {
			return fmt.Errorf("%w: voice %s: language of %d bytes is over %d", ErrInvalidCatalog, v.Name, len(v.Language), MaxNameBytes)
		}
		if v.SampleRate < 0 || v.SampleRate > 384000 {
			return fmt.Errorf("%w: voice %s: sample rate %d is outside 0..384000", ErrInvalidCatalog, v.Name, v.SampleRate)
		}
		if len(v.Speakers) > MaxCatalogSpeakers {
			return fmt.Errorf("%w: voice %s: %w: %d speakers is over MaxCatalogSpeakers (%d)", ErrInvalidCatalog, v.Name, ErrTooLarge, len(v.Speakers), MaxCatalogSpeakers)
		}
		for _, s := range v.Speakers {
			if err := validateName(s); err != nil {
				return fmt.Errorf("%w: voice %s: speaker: %w", ErrInvalidCatalog, v.Name, err)
			}
		}
	}
	return nil
}

// nodeState is what a Client knows of one render node.
type nodeState struct {
	online bool
	// voices is the catalog's voice names; nil until one came (the node
	// is then asked for any voice).
	voices map[string]bool
	// catalog is the catalog itself, for Client.Catalog.
	catalog []CatalogVoice
}

// Owners ranks nodes for one sentence by rendezvous (highest random
// weight) hashing of its routing key: the first is the sentence's owner,
// the second takes over when the owner goes. Every requester that sees
// the same nodes ranks them the same way, and a node that comes or goes
// moves only the sentences it owns or will own. The hash is FNV-1a 64,
// fixed by this function, so all versions agree.
func Owners(routing string, nodes []string) []string {
	type ranked struct {
		node   string
		weight uint64
	}
	rs := make([]ranked, len(nodes))
	for i, n := range nodes {
		h := fnv.New64a()
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write([]byte(routing))
		rs[i] = ranked{n, mix(h.Sum64())}
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		switch {
		case a.weight > b.weight:
			return -1
		case a.weight < b.weight:
			return 1
		}
		return strings.Compare(a.node, b.node)
	})
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.node
	}
	return out
}

// mix is a 64-bit finalizer (SplitMix64's): FNV's low bits alone spread
// names that differ in their last byte poorly.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// routingKey is what a request is routed by: its phrase key, or, when
// the requester has none, a digest of what the key would cover.
func routingKey(r Request) string {
	if r.Key != "" {
		return r.Key
	}
	h := fnv.New64a()
	for _, s := range []string{r.Voice, r.Speaker, r.Text} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var b [9]byte
	binary.BigEndian.PutUint64(b[:8], mixRate(r.Rate))
	if r.Normalize {
		b[8] = 1
	}
	h.Write(b[:])
	return fmt.Sprintf("%016x", h.Sum64())
}

func mixRate(rate float64) uint64 { return uint64(rate * 1e6) }
