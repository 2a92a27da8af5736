package clockprobe

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const (
	goodPing = `{"node":"kitchen","seq":17,"t0":1767225600123.456}`
	goodPong = `{"node":"hall","to":"kitchen","seq":17,"t0":1767225600123.456,"t1":1767225600150.001,"t2":1767225600150.24}`
)

func TestDecodePing(t *testing.T) {
	for _, tt := range []struct {
		name, payload string
		want          ping
		bad           string // part of the error; "" for none
	}{
		{"good", goodPing, ping{Node: "kitchen", Seq: 17, T0: 1767225600123.456}, ""},
		{"unknown fields ignored", `{"node":"a-b_1","seq":1,"t0":1767225600000,"v":2}`, ping{Node: "a-b_1", Seq: 1, T0: 1767225600000}, ""},
		{"not json", `ping`, ping{}, "invalid character"},
		{"not an object", `[1,2]`, ping{}, "cannot unmarshal"},
		{"no node", `{"seq":1,"t0":1767225600000}`, ping{}, "node must be 1..64 bytes"},
		{"node with a slash", `{"node":"a/b","seq":1,"t0":1767225600000}`, ping{}, `node contains '/'`},
		{"node with a wildcard", `{"node":"#","seq":1,"t0":1767225600000}`, ping{}, `node contains '#'`},
		{"node with a space", `{"node":"living room","seq":1,"t0":1767225600000}`, ping{}, `node contains ' '`},
		{"node too long", `{"node":"` + strings.Repeat("n", 65) + `","seq":1,"t0":1767225600000}`, ping{}, "not 65"},
		{"no seq", `{"node":"a","t0":1767225600000}`, ping{}, "seq missing"},
		{"negative seq", `{"node":"a","seq":-1,"t0":1767225600000}`, ping{}, "cannot unmarshal"},
		{"fractional seq", `{"node":"a","seq":1.5,"t0":1767225600000}`, ping{}, "cannot unmarshal"},
		{"no t0", `{"node":"a","seq":1}`, ping{}, "t0 0 is not Unix milliseconds"},
		{"t0 in seconds", `{"node":"a","seq":1,"t0":1767225600}`, ping{}, "t0 1.7672256e+09 is not Unix milliseconds"},
		{"t0 in microseconds", `{"node":"a","seq":1,"t0":1767225600000000}`, ping{}, "is not Unix milliseconds"},
		{"t0 overflows", `{"node":"a","seq":1,"t0":1e400}`, ping{}, "cannot unmarshal"},
		{"t0 a string", `{"node":"a","seq":1,"t0":"1767225600000"}`, ping{}, "cannot unmarshal"},
		{"too large", `{"node":"a","seq":1,"t0":1767225600000,"pad":"` + strings.Repeat("x", MaxPayload) + `"}`, ping{}, "over the limit of 512"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodePing([]byte(tt.payload))
			checkDecode(t, got, tt.want, err, tt.bad)
		})
	}
}

func TestDecodePong(t *testing.T) {
	const t0, t1 = `"t0":1767225600000`, `"t1":1767225600020`
	for _, tt := range []struct {
		name, payload string
		want          pong
		bad           string
	}{
		{"good", goodPong, pong{Node: "hall", To: "kitchen", Seq: 17, T0: 1767225600123.456, T1: 1767225600150.001, T2: 1767225600150.24}, ""},
		{"t2 equals t1", `{"node":"a","to":"b","seq":3,` + t0 + `,` + t1 + `,"t2":1767225600020}`,
			pong{Node: "a", To: "b", Seq: 3, T0: 1767225600000, T1: 1767225600020, T2: 1767225600020}, ""},
		{"no to", `{"node":"a","seq":3,` + t0 + `,` + t1 + `,"t2":1767225600021}`, pong{}, "to must be 1..64 bytes"},
		{"to with a plus", `{"node":"a","to":"b+","seq":3,` + t0 + `,` + t1 + `,"t2":1767225600021}`, pong{}, `to contains '+'`},
		{"no seq", `{"node":"a","to":"b",` + t0 + `,` + t1 + `,"t2":1767225600021}`, pong{}, "seq missing"},
		{"no t1", `{"node":"a","to":"b","seq":3,` + t0 + `,"t2":1767225600021}`, pong{}, "t1 0 is not"},
		{"t2 before t1", `{"node":"a","to":"b","seq":3,` + t0 + `,` + t1 + `,"t2":1767225600019}`, pong{}, "t2 − t1 is -1.000 ms"},
		{"held too long", `{"node":"a","to":"b","seq":3,` + t0 + `,` + t1 + `,"t2":1767225610021}`, pong{}, "t2 − t1 is 10001.000 ms"},
		{"year 2300", `{"node":"a","to":"b","seq":3,` + t0 + `,"t1":10413792000000,"t2":10413792000000}`, pong{}, "t1 1.0413792e+13 is not"},
		{"negative time", `{"node":"a","to":"b","seq":3,"t0":-1767225600000,` + t1 + `,"t2":1767225600021}`, pong{}, "t0 -1.7672256e+12 is not"},
		{"empty", ``, pong{}, "unexpected end"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodePong([]byte(tt.payload))
			checkDecode(t, got, tt.want, err, tt.bad)
		})
	}
}

func checkDecode[M comparable](t *testing.T, got, want M, err error, bad string) {
	t.Helper()
	if bad == "" {
		if err != nil || got != want {
			t.Errorf("decode = %+v, %v; want %+v", got, err, want)
		}
		return
	}
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), bad) {
		t.Errorf("decode error %v, want ErrMalformed saying %q", err, bad)
	}
}

// Whatever the payload, the decoders return quickly without panicking,
// and what they accept keeps to the limits and encodes back to itself.
func FuzzDecodePing(f *testing.F) {
	for _, s := range []string{goodPing, `{"node":"a","seq":1,"t0":946684800000}`, `{"node":"a/b","seq":1,"t0":1}`,
		`{"node":"a","seq":18446744073709551615,"t0":7258118400000}`, `{}`, `null`, `{"node":"\u0000"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		p, err := decodePing(payload)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if checkName("node", p.Node) != nil || p.Seq == 0 || checkTime("t0", p.T0) != nil {
			t.Fatalf("accepted %+v", p)
		}
		again := roundTrip(t, p, decodePing)
		if again != p {
			t.Fatalf("%+v encodes to %+v", p, again)
		}
	})
}

func FuzzDecodePong(f *testing.F) {
	for _, s := range []string{goodPong, `{"node":"a","to":"b","seq":1,"t0":946684800000,"t1":7258118400000,"t2":7258118400000}`,
		`{"node":"a","to":"b","seq":1,"t0":1767225600000,"t1":1767225600020,"t2":1767225610020}`,
		`{"node":"a","to":"","seq":1}`, `{"t1":1e308,"t2":-1e308}`, `"pong"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		p, err := decodePong(payload)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if checkName("node", p.Node) != nil || checkName("to", p.To) != nil || p.Seq == 0 ||
			checkTime("t0", p.T0) != nil || p.T2 < p.T1 || p.T2-p.T1 > ms(MaxTurnaround) {
			t.Fatalf("accepted %+v", p)
		}
		if again := roundTrip(t, p, decodePong); again != p {
			t.Fatalf("%+v encodes to %+v", p, again)
		}
	})
}

func roundTrip[M any](t *testing.T, m M, decode func([]byte) (M, error)) M {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("encode %+v: %v", m, err)
	}
	again, err := decode(b)
	if err != nil {
		t.Fatalf("%s does not decode again: %v", b, err)
	}
	return again
}
