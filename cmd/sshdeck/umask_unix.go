//go:build unix

package main

import (
	"net"
	"sync"
	"syscall"
)

// umaskMu serialises this process's changes of its umask.
var umaskMu sync.Mutex

// listenPrivate listens on a Unix socket at path that is created under the
// umask 077, so that the socket file is never open to others, not even
// between its creation and a chmod. The umask is the process's: it is set
// around the bind alone and restored at once (a file another goroutine
// creates meanwhile is made no more open than its mode, at most private).
func listenPrivate(path string) (net.Listener, error) {
	umaskMu.Lock()
	defer umaskMu.Unlock()
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	return net.Listen("unix", path)
}
