package cache

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// mappedRSS sums the Rss of this process's mappings of path, in bytes.
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && len(fields[1]) == 4 {
			// A mapping's header: range perms offset dev inode [path].
			in = len(fields) >= 6 && fields[5] == path
			continue
		}
		if in && len(fields) == 3 && fields[0] == "Rss:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			total += kb << 10
		}
	}
	return total
}

func TestReleaseMapped(t *testing.T) {
	s := openTemp(t, nil)
	for i := range 200 {
		mustPut(t, s, key(fmt.Sprint("p", i)), "v", sealed(filler(8000, byte(i))))
	}
	for i := range 200 {
		if _, _, err := s.GetPhrase(key(fmt.Sprint("p", i))); err != nil {
			t.Fatal(err)
		}
	}
	before := mappedRSS(t, s.Path())
	if before < 1<<20 {
		t.Fatalf("the cache file's map holds %d bytes of RSS after reading 1.6 MB through it", before)
	}
	n, err := s.ReleaseMapped()
	if err != nil || n <= 0 {
		t.Fatalf("ReleaseMapped: %d, %v", n, err)
	}
	if after := mappedRSS(t, s.Path()); after > before/4 {
		t.Errorf("mapped RSS %d bytes before, %d after: not released", before, after)
	}
	mustHit(t, s, key("p7"), sealed(filler(8000, 7))) // the data comes back
}

func TestReleaseAfterCommit(t *testing.T) {
	s := openTemp(t, &Options{ReleaseAfterCommit: true})
	for i := range 200 {
		mustPut(t, s, key(fmt.Sprint("p", i)), "v", sealed(filler(8000, byte(i))))
	}
	// Every commit read neighbours through the map and let them go again.
	if rss := mappedRSS(t, s.Path()); rss > 256<<10 {
		t.Errorf("the cache file's map holds %d bytes of RSS after 200 commits", rss)
	}
	mustHit(t, s, key("p199"), sealed(filler(8000, 199)))
}
