package embedded

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// crashEnv carries the store path to the child process of the crash test.
const crashEnv = "SSHDECK_CRASH_CHILD_DB"

const crashOwner = "crash"

// crashPayload is a few hundred bytes that depend on the id, so a reader can
// tell a host's own data from another's or from garbage.
func crashPayload(id int64) []byte {
	b := make([]byte, 400)
	for i := range b {
		b[i] = byte(id*31 + int64(i))
	}
	return b
}

// TestCrashChild is the writer killed by TestCrashKeepsAcknowledgedWrites: it
// prints "ack <id>" only after CreateHost returned, i.e. after the commit.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("run as a child of TestCrashKeepsAcknowledgedWrites")
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Until killed: by the parent once it has its acks, or by the kernel
	// if the parent dies first (Pdeathsig), so an orphan never outlives it.
	// No deadline: how fast fsynced writes go is the machine's.
	for {
		id, err := s.NextHostID(ctx, crashOwner)
		if err != nil {
			t.Fatal(err)
		}
		h := &sshdeck.Host{Owner: crashOwner, ID: id, Version: 1, Sealed: sshdeck.SealedCredentials{Key: crashPayload(id)}}
		h.Name = fmt.Sprintf("crash-%d", id)
		if err := s.CreateHost(ctx, h, 1000); err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fprintf(os.Stdout, "ack %d\n", id); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crash.db")
	var acked []int64
	for round := range 3 {
		ids := runCrashChild(t, path, 200+rand.IntN(100))
		if len(acked) > 0 && ids[0] <= acked[len(acked)-1] {
			t.Fatalf("round %d: first id %d is not above the last acknowledged %d", round, ids[0], acked[len(acked)-1])
		}
		acked = append(acked, ids...)
		checkAcked(t, path, acked)
		t.Logf("round %d: %d acknowledged writes, %d in all", round, len(ids), len(acked))
	}
}

// runCrashChild starts a writer on path, kills it once it has acknowledged
// atLeast hosts, and returns every id it acknowledged.
func runCrashChild(t *testing.T, path string, atLeast int) []int64 {
	t.Helper()
	// No deadline: a process start and a few hundred fsynced writes take
	// what the machine gives them. The child ends by the kill below, or by
	// failing (its output then ends, and so does the loop).
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	var ids []int64
	killed := false
	r := bufio.NewReader(out)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			// A line cut short by the kill is not an acknowledgement.
			if !errors.Is(err, io.EOF) {
				t.Errorf("reading the child: %v", err)
			}
			break
		}
		idText, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "ack ")
		if !ok {
			continue // the test framework's own output
		}
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil {
			t.Fatalf("child wrote %q", line)
		}
		ids = append(ids, id)
		// Keep reading after the kill: acks already in the pipe count too.
		if !killed && len(ids) >= atLeast {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child stopped after %d acks (%v): %s", len(ids), err, stderr.Bytes())
	}
	if err == nil {
		t.Fatalf("child exited cleanly despite the kill")
	}
	return ids
}

func checkAcked(t *testing.T, path string, acked []int64) {
	t.Helper()
	s := mustOpen(t, path)
	defer s.Close()
	ctx := t.Context()
	for _, id := range acked {
		h, err := s.Host(ctx, crashOwner, id)
		if err != nil {
			t.Fatalf("acknowledged host %d: %v", id, err)
		}
		if h.ID != id || h.Name != fmt.Sprintf("crash-%d", id) || !bytes.Equal(h.Sealed.Key, crashPayload(id)) {
			t.Fatalf("acknowledged host %d came back as %d %q with %d bytes of key", id, h.ID, h.Name, len(h.Sealed.Key))
		}
	}
	hosts, err := s.Hosts(ctx, crashOwner, 0, 0)
	if err != nil {
		t.Fatalf("Hosts: %v", err)
	}
	// One more than acknowledged is fine: a commit may beat the kill to its ack.
	if len(hosts) < len(acked) {
		t.Fatalf("Hosts: got %d hosts, want at least %d", len(hosts), len(acked))
	}
}
