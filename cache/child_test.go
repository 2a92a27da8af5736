package cache

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// child is the test binary re-run as a second process (see runChild).
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr strings.Builder
	ready  chan struct{}
	exited chan struct{}

	mu    sync.Mutex
	lines []string
}

func startChild(t *testing.T, role, path string, env ...string) *child {
	t.Helper()
	c := &child{ready: make(chan struct{}), exited: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), append([]string{"MYNAH_CACHE_CHILD=" + role, "MYNAH_CACHE_PATH=" + path}, env...)...)
	c.cmd.Stderr = &c.stderr
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.exited)
		sc := bufio.NewScanner(stdout)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			c.mu.Lock()
			c.lines = append(c.lines, line)
			c.mu.Unlock()
			if line == "ready" {
				once.Do(func() { close(c.ready) })
			}
		}
	}()
	t.Cleanup(func() { c.kill() })
	return c
}

// waitReady waits until the child printed "ready" (it has written to the
// file), failing the test if it exits first.
func (c *child) waitReady(t *testing.T) {
	t.Helper()
	select {
	case <-c.ready:
	case <-c.exited:
		_ = c.cmd.Wait()
		t.Fatalf("child exited before it was ready: %s", c.stderr.String())
	case <-time.After(60 * time.Second): // a hang, not a speed bound
		t.Fatalf("child never became ready: %s", c.stderr.String())
	}
}

// kill sends SIGKILL and waits for the child and its output.
func (c *child) kill() {
	if c.cmd.ProcessState != nil {
		return
	}
	_ = c.cmd.Process.Kill()
	<-c.exited
	_ = c.cmd.Wait()
}

// stop closes the child's stdin (a "hold" child then closes its store and
// exits) and waits.
func (c *child) stop(t *testing.T) {
	t.Helper()
	c.stdin.Close()
	<-c.exited
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child: %v: %s", err, c.stderr.String())
	}
}

func (c *child) output() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...)
}
