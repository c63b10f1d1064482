package client

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// socksAnswer is what a SOCKS5 server answered: the method it chose and,
// if it got that far, the request's reply code and the connection.
type socksAnswer struct {
	method byte
	code   byte
	conn   net.Conn
}

// socksHello is a SOCKS5 client's greeting and request, written here
// byte by byte to check the server against RFC 1928 rather than against
// a library.
func socksHello(t *testing.T, addr string, methods []byte, cmd, atyp byte, dst []byte, port uint16) socksAnswer {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(patience))
	a := socksAnswer{conn: conn, code: 0xFF}
	conn.Write(append([]byte{5, byte(len(methods))}, methods...))
	var method [2]byte
	if _, err := io.ReadFull(conn, method[:]); err != nil {
		t.Fatalf("no method chosen: %v", err)
	}
	if a.method = method[1]; a.method != socksNoAuth {
		return a
	}
	req := []byte{5, cmd, 0, atyp}
	if atyp == socksAddrDomainName {
		req = append(req, byte(len(dst)))
	}
	req = append(append(req, dst...), 0, 0)
	binary.BigEndian.PutUint16(req[len(req)-2:], port)
	conn.Write(req)
	var rep [10]byte
	if _, err := io.ReadFull(conn, rep[:]); err != nil {
		t.Fatalf("no reply: %v", err)
	}
	a.code = rep[1]
	conn.SetDeadline(time.Time{})
	return a
}

func socksDialConnect(t *testing.T, addr string, cmd, atyp byte, dst []byte, port uint16) socksAnswer {
	t.Helper()
	return socksHello(t, addr, []byte{socksNoAuth}, cmd, atyp, dst, port)
}

func TestSOCKSWithCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed: the SOCKS5 server is checked by the Go client alone")
	}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	}))
	defer web.Close()
	_, port, _ := net.SplitHostPort(web.Listener.Addr().String())
	ft := newFakeTunnel(t)
	fw := startForward(t, ft.client(), "", 0)
	fw.events.waitFor(t, "forwarding SOCKS5 on "+fw.addr+" via web", 1)

	// target.test resolves on the service's side only: curl must pass
	// the name through (--socks5-hostname).
	cmd := exec.Command(curl, "-sS", "--max-time", "20", "--socks5-hostname", fw.addr, "http://target.test:"+port+"/")
	cmd.Env = []string{"PATH=/usr/bin:/bin"} // no proxy settings of the environment
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "hello from target.test:"+port {
		t.Errorf("curl through the SOCKS forward: %q (%v)", out, err)
	}
}

func TestSOCKSReplies(t *testing.T) {
	ft := newFakeTunnel(t)
	echo := echoServer(t)
	_, echoPort, _ := net.SplitHostPort(echo)
	var port uint16
	fmt.Sscan(echoPort, &port)
	fw := startForward(t, ft.client(), "", 0)

	ipv4 := socksDialConnect(t, fw.addr, socksConnect, socksAddrIPv4, net.IPv4(127, 0, 0, 1).To4(), port)
	if ipv4.code != socksSucceeded {
		t.Fatalf("CONNECT to an IPv4 address: reply %#x", ipv4.code)
	}
	roundTrip(t, ipv4.conn, []byte("by address"))

	name := socksDialConnect(t, fw.addr, socksConnect, socksAddrDomainName, []byte("target.test"), port)
	if name.code != socksSucceeded {
		t.Fatalf("CONNECT to a name: reply %#x", name.code)
	}
	roundTrip(t, name.conn, []byte("by name"))

	for _, c := range []struct {
		what string
		cmd  byte
		atyp byte
		dst  []byte
		want byte
		log  string
	}{
		{"BIND", 0x02, socksAddrIPv4, net.IPv4(127, 0, 0, 1).To4(), socksCommandNotSupported, "SOCKS command 0x2 is not supported"},
		{"UDP ASSOCIATE", 0x03, socksAddrIPv4, net.IPv4(127, 0, 0, 1).To4(), socksCommandNotSupported, "SOCKS command 0x3 is not supported"},
		{"a denied address", socksConnect, socksAddrIPv4, net.IPv4(169, 254, 169, 254).To4(), socksNotAllowed,
			"→ 169.254.169.254:80: refused: 169.254.169.254:80 is in a denied range (link-local)"},
		{"a name that does not resolve", socksConnect, socksAddrDomainName, []byte("nowhere.test"), socksHostUnreachable,
			"→ nowhere.test:80: refused: nowhere.test does not resolve"},
		{"an IPv6 address refused", socksConnect, socksAddrIPv6, net.ParseIP("2001:db8::1"), socksConnectionRefused,
			"→ [2001:db8::1]:80: refused: [2001:db8::1]:80 refused the connection"},
	} {
		a := socksDialConnect(t, fw.addr, c.cmd, c.atyp, c.dst, 80)
		if a.code != c.want {
			t.Errorf("%s: reply %#x, want %#x", c.what, a.code, c.want)
		}
		if _, err := a.conn.Read(make([]byte, 1)); err == nil {
			t.Errorf("%s: the connection stays open after the failure reply", c.what)
		}
		if line := fw.events.waitFor(t, c.log, 1); !strings.HasPrefix(line, a.conn.LocalAddr().String()) {
			t.Errorf("%s: logged %q, want it to name the local connection %s", c.what, line, a.conn.LocalAddr())
		}
	}

	userPass := socksHello(t, fw.addr, []byte{0x02}, socksConnect, socksAddrIPv4, nil, 0)
	if userPass.method != socksNoAcceptable {
		t.Errorf("username/password only: method %#x, want no acceptable methods", userPass.method)
	}
	if _, err := userPass.conn.Read(make([]byte, 1)); err == nil {
		t.Error("the connection stays open after no acceptable method")
	}
}

func TestBindAddress(t *testing.T) {
	for in, want := range map[string]string{
		"8022": "127.0.0.1:8022", "0.0.0.0:8022": "0.0.0.0:8022", "localhost:1": "localhost:1",
		"*:8022": ":8022", ":8022": ":8022", "[::1]:8022": "[::1]:8022", "::1:8022": "[::1]:8022",
		"x": "", "1:70000": "", "": "", "-1": "",
	} {
		got, err := bindAddress(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("bindAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
