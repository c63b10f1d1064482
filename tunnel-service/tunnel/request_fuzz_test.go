package tunnel

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sshdeck/sshdeck/shared/check"
	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// FuzzConnectRequest: the tunnel connect decoder, from the body to the
// tunnel it asks for (web.DecodeJSON, ConnectRequest.parse and the
// denied-range check, with a resolver that resolves nothing). It fails
// only with the client's codes; a tunnel it accepts has addresses that are
// IP literals or DNS names, none in an always-denied range, ports in
// range, a retry interval of 1 s to 1 h, and no control character in a
// field that is not a key. Seeds: testdata/fuzz/FuzzConnectRequest.
func FuzzConnectRequest(f *testing.F) {
	noDNS := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no DNS in the fuzzer")
	}}
	d := &dialer{deny: newDenyList(nil), resolver: noDNS}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req ConnectRequest
		err := web.DecodeJSON(strings.NewReader(string(body)), "body", &req)
		var spec sshdeck.TunnelSpec
		var creds sshdeck.TunnelCredentials
		if err == nil {
			_, spec, creds, err = req.parse(MinRetryInterval*time.Millisecond, config.DefaultLimits.JumpHosts)
		}
		if err == nil {
			err = d.checkAllowed(context.Background(), "sourceIP", spec.Source.IP, false)
			if err == nil {
				err = d.checkAllowed(context.Background(), "endpointIP", spec.Endpoint.IP, true)
			}
		}
		if err != nil {
			switch sshdeck.ErrorCode(err) {
			case sshdeck.Invalid, sshdeck.TooLarge, sshdeck.Denied:
			default:
				t.Fatalf("error %v (code %s), want the client's", err, sshdeck.ErrorCode(err))
			}
			return
		}
		if spec.RetryInterval < time.Second || spec.RetryInterval > time.Hour {
			t.Fatalf("retryInterval %v", spec.RetryInterval)
		}
		for _, h := range []sshdeck.TunnelHop{spec.Source, spec.Endpoint} {
			if err := check.Address("ip", h.IP); err != nil {
				t.Fatalf("address %q passed: %v", h.IP, err)
			}
			if a, ok := check.CanonicalIP(h.IP); ok {
				for _, p := range AlwaysDeny {
					if p.Contains(a) {
						t.Fatalf("address %q (%v) in %v passed", h.IP, a, p)
					}
				}
			}
			if h.SSHPort < 1 || h.SSHPort > 65535 {
				t.Fatalf("SSH port %d", h.SSHPort)
			}
		}
		if spec.SourcePort < 1 || spec.SourcePort > 65535 || spec.EndpointPort < 1 || spec.EndpointPort > 65535 {
			t.Fatalf("ports %d %d", spec.SourcePort, spec.EndpointPort)
		}
		for _, s := range []string{req.Name, spec.HostName, spec.Source.Username, spec.Endpoint.Username,
			creds.Source.Password, creds.Endpoint.Password, creds.Source.KeyPassword, creds.Endpoint.KeyPassword} {
			if !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 {
				t.Fatalf("a field holds %q", s)
			}
		}
	})
}
