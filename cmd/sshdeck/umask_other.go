//go:build !unix

package main

import "net"

// listenPrivate listens on a Unix socket at path. Without a umask, the
// socket's access is the directory's (made 0700 by app.Open).
func listenPrivate(path string) (net.Listener, error) {
	return net.Listen("unix", path)
}
