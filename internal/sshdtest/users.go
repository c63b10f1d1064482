package sshdtest

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"os/user"
	"strings"
	"testing"
	"time"
)

// EnsureShellUser creates the local user name if it does not exist, with a
// home of its own (/home/<name>) and /bin/sh as its shell, and sets its
// password: a user that can run commands, as a direct tunnel's source user
// runs ssh. It returns the user's home.
func EnsureShellUser(t testing.TB, name, password string) (home string) {
	t.Helper()
	Require(t)
	usersMu.Lock()
	defer usersMu.Unlock()
	deadline := time.Now().Add(timeout)
	for {
		home, err := ensureShellUser(name, password)
		if err == nil {
			return home
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshdtest: user %s: %v", name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ensureShellUser(name, password string) (string, error) {
	if _, err := user.Lookup(name); err != nil {
		if !errors.As(err, new(user.UnknownUserError)) {
			return "", err
		}
		if out, err := exec.Command("useradd", "-m", "-s", "/bin/sh", name).CombinedOutput(); err != nil {
			return "", fmt.Errorf("useradd: %v: %s", err, bytes.TrimSpace(out))
		}
	}
	cmd := exec.Command("chpasswd")
	cmd.Stdin = strings.NewReader(name + ":" + password + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("chpasswd: %v: %s", err, bytes.TrimSpace(out))
	}
	u, err := user.Lookup(name)
	if err != nil {
		return "", err
	}
	return u.HomeDir, nil
}
