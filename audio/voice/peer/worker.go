package peer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrTimeout means a worker did not answer in time; it has been killed.
var ErrTimeout = errors.New("peer worker did not answer in time")

// WorkerOptions bound the waits on a worker. A nil *WorkerOptions means
// the defaults; they detect a hung worker, they are not speed limits.
type WorkerOptions struct {
	// ReadyTimeout bounds the start and the load (default 2 min).
	ReadyTimeout time.Duration
	// SayTimeout bounds one sentence (default 2 min).
	SayTimeout time.Duration
}

func (o *WorkerOptions) withDefaults() WorkerOptions {
	var r WorkerOptions
	if o != nil {
		r = *o
	}
	if r.ReadyTimeout <= 0 {
		r.ReadyTimeout = 2 * time.Minute
	}
	if r.SayTimeout <= 0 {
		r.SayTimeout = 2 * time.Minute
	}
	return r
}

// Worker is a running worker process.
type Worker struct {
	Name  string
	Ready Ready
	// StartToReady is the wall time from starting the process to reading
	// its Ready line: exec, the runtime's own start, the load.
	StartToReady time.Duration

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte // the reader goroutine's lines; closed at EOF
	done   chan struct{}
	stderr *tail
	opts   WorkerOptions
	closed sync.Once
}

// StartWorker starts cmd (its stdin and stdout must be unset) and waits
// for its Ready line. name is used in errors.
func StartWorker(name string, cmd *exec.Cmd, opts *WorkerOptions) (*Worker, error) {
	o := opts.withDefaults()
	w := &Worker{Name: name, cmd: cmd, opts: o, lines: make(chan []byte), done: make(chan struct{}), stderr: &tail{max: 4096}}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	w.stdin = stdin
	if cmd.Stderr == nil {
		cmd.Stderr = w.stderr
	} else {
		cmd.Stderr = io.MultiWriter(cmd.Stderr, w.stderr)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go w.read(stdout)
	line, err := w.next(o.ReadyTimeout)
	if err == nil {
		w.StartToReady = time.Since(start)
		w.Ready, err = ParseReady(line)
	}
	if err != nil {
		w.kill()
		return nil, fmt.Errorf("start %s: %w%s", name, err, w.stderrNote())
	}
	return w, nil
}

// read hands stdout's lines to next until EOF; Close takes whatever
// nobody asked for, so it never blocks for good.
func (w *Worker) read(stdout io.Reader) {
	defer close(w.done)
	defer close(w.lines)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 4096), MaxLine)
	for sc.Scan() {
		w.lines <- bytes.Clone(sc.Bytes())
	}
}

func (w *Worker) next(timeout time.Duration) ([]byte, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line, ok := <-w.lines:
		if !ok {
			return nil, errors.New("worker exited")
		}
		return line, nil
	case <-t.C:
		return nil, fmt.Errorf("%w (%v)", ErrTimeout, timeout)
	}
}

// Say has the worker synthesize text and returns its answer.
func (w *Worker) Say(text string) (Said, error) {
	if err := WriteLine(w.stdin, Say{Text: text}); err != nil {
		w.kill()
		return Said{}, fmt.Errorf("%s: %w%s", w.Name, err, w.stderrNote())
	}
	line, err := w.next(w.opts.SayTimeout)
	if err != nil {
		w.kill()
		return Said{}, fmt.Errorf("%s: %w%s", w.Name, err, w.stderrNote())
	}
	s, err := ParseSaid(line)
	if err != nil {
		return Said{}, fmt.Errorf("%s: %w", w.Name, err)
	}
	return s, nil
}

// PeakRSS is the worker's peak resident memory so far (VmHWM), in bytes.
func (w *Worker) PeakRSS() (int64, error) {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(w.cmd.Process.Pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("%s: peak rss: %w", w.Name, err)
	}
	kb, err := StatusKB(status, "VmHWM")
	if err != nil {
		return 0, fmt.Errorf("%s: peak rss: %w", w.Name, err)
	}
	return kb << 10, nil
}

// Close ends the worker's input, waits for it to exit (killing it after
// CloseTimeout) and reaps it; the error says how it ended when not cleanly.
func (w *Worker) Close() error {
	var err error
	w.closed.Do(func() {
		w.stdin.Close()
		kill := time.NewTimer(CloseTimeout)
		defer kill.Stop()
	drain: // stdout ends when the process does
		for {
			select {
			case _, ok := <-w.lines:
				if !ok {
					break drain
				}
			case <-kill.C:
				w.cmd.Process.Kill()
			}
		}
		<-w.done
		if err = w.cmd.Wait(); err != nil {
			err = fmt.Errorf("%s: %w%s", w.Name, err, w.stderrNote())
		}
	})
	return err
}

// CloseTimeout is how long Close waits for a worker to exit by itself.
const CloseTimeout = 10 * time.Second

func (w *Worker) kill() {
	w.cmd.Process.Kill()
	w.Close()
}

func (w *Worker) stderrNote() string {
	s := strings.TrimSpace(w.stderr.String())
	if s == "" {
		return ""
	}
	return "; its stderr ends:\n" + s
}

// StatusKB reads a "Name:   123 kB" field of a /proc/PID/status file.
func StatusKB(status []byte, field string) (int64, error) {
	for line := range strings.Lines(string(status)) {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || name != field {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%s: %q is not a size in kB", field, strings.TrimSpace(rest))
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s: %q is not a size in kB", field, strings.TrimSpace(rest))
		}
		return n, nil
	}
	return 0, fmt.Errorf("no %s field in the status file", field)
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
