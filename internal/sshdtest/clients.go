package sshdtest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// Every loopback connection on Linux comes from 127.0.0.1, whatever
// address it goes to (the local route of 127.0.0.0/8 says src 127.0.0.1),
// so sshd cannot tell a connection that a jump host's sshd made from one
// the test made: `AllowUsers user@127.0.0.2` or `Match Address` on an inner
// host would refuse both. Which process holds the client end of each
// connection tells them apart: the kernel knows it (Clients, Holds).

// Clients returns the process ids holding the client end of each TCP
// connection established to the server, one per connection, read from
// /proc/net/tcp{,6} and every process's file descriptors. A connection
// whose end no process holds any more (closing) is left out.
func (s *Server) Clients() ([]int, error) {
	ap, err := netip.ParseAddrPort(s.Addr)
	if err != nil {
		return nil, fmt.Errorf("sshdtest: %w", err)
	}
	v4, v6 := ap.Addr().As4(), ap.Addr().As16() // ::ffff:a.b.c.d
	port := fmt.Sprintf(":%04X", ap.Port())
	inodes := map[string]bool{}
	if err := established("/proc/net/tcp", procAddr(v4[:])+port, inodes); err != nil {
		return nil, err
	}
	if err := established("/proc/net/tcp6", procAddr(v6[:])+port, inodes); err != nil {
		return nil, err
	}
	return holders(inodes)
}

// procAddr spells an address as /proc/net/tcp does: each 32-bit word of
// it in the machine's byte order, in hex.
func procAddr(raw []byte) string {
	var out strings.Builder
	for i := 0; i < len(raw); i += 4 {
		fmt.Fprintf(&out, "%08X", binary.NativeEndian.Uint32(raw[i:i+4]))
	}
	return out.String()
}

// established adds to inodes the sockets of table whose remote end is
// remote and that are established (state 01).
func established(table, remote string, inodes map[string]bool) error {
	f, err := os.Open(table)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no IPv6
	}
	if err != nil {
		return fmt.Errorf("sshdtest: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		if fields[2] == remote && fields[3] == "01" && fields[9] != "0" {
			inodes[fields[9]] = true
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("sshdtest: reading %s: %w", table, err)
	}
	return nil
}

// holders returns the process holding each socket of inodes.
func holders(inodes map[string]bool) ([]int, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("sshdtest: %w", err)
	}
	var pids []int
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		dir := "/proc/" + p.Name() + "/fd/"
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue // gone, or a kernel thread
		}
		for _, fd := range fds {
			link, err := os.Readlink(dir + fd.Name())
			if err != nil {
				continue
			}
			inode, ok := strings.CutPrefix(link, "socket:[")
			if ok && inodes[strings.TrimSuffix(inode, "]")] {
				pids = append(pids, pid)
				delete(inodes, strings.TrimSuffix(inode, "]")) // one holder per connection
			}
		}
	}
	return pids, nil
}

// Holds reports whether pid is the server's sshd or one of its
// descendants: the processes that serve its connections, and so open the
// connections of its direct-tcpip channels. False while it is killed.
func (s *Server) Holds(pid int) bool {
	root := s.Pid()
	for seen := 0; pid > 1 && seen < 1000; seen++ {
		if pid == root {
			return root != 0
		}
		ppid, state, err := stat(pid)
		if err != nil || state == 0 {
			return false
		}
		pid = ppid
	}
	return false
}
