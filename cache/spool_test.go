package cache

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSpoolOrderReplaceDelete(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 6, 1, 7, 0, 0, 0, time.UTC)
	puts := []struct {
		id string
		at time.Duration
	}{{"c", 2}, {"a", 1}, {"b", 2}, {"d", 0}, {"e", 3}}
	for _, p := range puts {
		if err := s.SpoolPut(p.id, []byte("payload "+p.id), t0.Add(p.at*time.Second), time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	// Same arrival time: ordered by id. A put of a known id replaces it.
	if err := s.SpoolPut("a", []byte("again"), t0.Add(4*time.Second), t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.SpoolDelete("e"); err != nil {
		t.Fatal(err)
	}
	if err := s.SpoolDelete("never"); err != nil {
		t.Errorf("deleting an unknown id: %v", err)
	}
	want := "d b c a"
	check := func(s *Store) {
		t.Helper()
		list, err := s.SpoolList()
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range list {
			ids = append(ids, e.ID)
		}
		if got := strings.Join(ids, " "); got != want {
			t.Fatalf("spool order %q, want %q", got, want)
		}
		a := list[3]
		if string(a.Payload) != "again" || !a.Received.Equal(t0.Add(4*time.Second)) || !a.Expires.Equal(t0.Add(time.Hour)) {
			t.Errorf("replaced entry %+v", a)
		}
		if !list[0].Expires.IsZero() {
			t.Errorf("no expiry came back as %v", list[0].Expires)
		}
	}
	check(s)
	s.Close()
	s, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close(); mustBeSound(t, path) }()
	check(s)
	if st := s.Stats(); st.SpoolEntries != 4 {
		t.Errorf("stats %+v", st)
	}
}

func TestSpoolLimits(t *testing.T) {
	s := openTemp(t, &Options{MaxSpoolEntries: 3, MaxSpoolPayload: 10})
	now := time.Now()
	cases := []struct {
		id      string
		payload string
		at      time.Time
		want    error
		mention string
	}{
		{"", "x", now, ErrInvalid, "id"},
		{strings.Repeat("i", 256), "x", now, ErrInvalid, "id"},
		{"big", "12345678901", now, ErrInvalid, "MaxSpoolPayload"},
		{"zero", "x", time.Time{}, ErrInvalid, "receive time"},
		{"early", "x", time.Unix(-1, 0), ErrInvalid, "receive time"},
		{"ok", "1234567890", now, nil, ""},
	}
	for _, c := range cases {
		err := s.SpoolPut(c.id, []byte(c.payload), c.at, time.Time{})
		if !errors.Is(err, c.want) || (c.want != nil && !strings.Contains(err.Error(), c.mention)) {
			t.Errorf("put %.20q: %v, want %v naming %q", c.id, err, c.want, c.mention)
		}
	}
	for i := range 2 {
		if err := s.SpoolPut(fmt.Sprint(i), nil, now, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SpoolPut("4th", nil, now, time.Time{}); !errors.Is(err, ErrSpoolFull) {
		t.Errorf("put beyond MaxSpoolEntries: %v, want ErrSpoolFull", err)
	}
	if err := s.SpoolPut("ok", []byte("replace"), now, time.Time{}); err != nil {
		t.Errorf("replacing in a full spool: %v", err)
	}
	if st := s.Stats(); st.WriteErrors != 0 {
		t.Errorf("refused arguments counted as write errors: %+v", st)
	}
}
