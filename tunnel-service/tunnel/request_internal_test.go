package tunnel

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// validRequest is a connect request that parses, with passwords: no key
// parsing slows the fuzzer down unless it adds one.
func validRequest() *ConnectRequest {
	p := func(v int) *int { return &v }
	return &ConnectRequest{
		Name: "t", SourceIP: "192.0.2.1", SourceUsername: "a", SourcePassword: "pw",
		EndpointIP: "10.0.0.5", EndpointUsername: "b", EndpointPassword: "pw",
		SourcePort: p(8080), EndpointPort: p(9000),
	}
}

// TestRetryIntervalFloor: a retryInterval below 1000 ms is raised to it
// (API.md), whatever it is; above an hour is refused.
func TestRetryIntervalFloor(t *testing.T) {
	floor := MinRetryInterval * time.Millisecond
	for _, tc := range []struct {
		ms   *int
		want time.Duration
	}{
		{nil, 5 * time.Second},
		{ptr(0), time.Second},
		{ptr(1), time.Second},
		{ptr(99), time.Second},
		{ptr(999), time.Second},
		{ptr(-5), time.Second},
		{ptr(-1 << 62), time.Second},
		{ptr(1000), time.Second},
		{ptr(1500), 1500 * time.Millisecond},
		{ptr(3_600_000), time.Hour},
	} {
		req := validRequest()
		req.RetryInterval = tc.ms
		_, spec, _, err := req.parse(floor, config.DefaultLimits.JumpHosts)
		if err != nil || spec.RetryInterval != tc.want {
			t.Errorf("retryInterval %v: %v, %v; want %v", deref(tc.ms), spec.RetryInterval, err, tc.want)
		}
	}
	for _, ms := range []int{3_600_001, 1 << 62} {
		req := validRequest()
		req.RetryInterval = &ms
		if _, _, _, err := req.parse(floor, config.DefaultLimits.JumpHosts); sshdeck.ErrorCode(err) != sshdeck.Invalid || !strings.Contains(err.Error(), "retryInterval") {
			t.Errorf("retryInterval %d: %v, want Invalid naming it", ms, err)
		}
	}
}

func ptr(v int) *int { return &v }

func deref(p *int) any {
	if p == nil {
		return "absent"
	}
	return *p
}

// TestDeniedRanges: a hop the service dials itself (the source, or a
// source's first jump host) is checked against AlwaysDeny and the
// deployment's ranges, one that a hop dials (the endpoint, a later jump
// host, a source behind jump hosts) against AlwaysDeny only; every
// spelling of an address is checked as the canonical address it names.
func TestDeniedRanges(t *testing.T) {
	d := &dialer{deny: newDenyList([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("10.0.0.0/16")}), resolver: net.DefaultResolver}
	ctx := context.Background()
	always := []string{
		"169.254.169.254", "169.254.169.254.", "::ffff:169.254.169.254", "::ffff:a9fe:a9fe", "2852039166", "0xa9fea9fe",
		"0251.0376.0251.0376", "169.254.43518", "fe80::1", "fe80::1%eth0", "FE80::1%25eth0", "fe80::a9fe:a9fe%1",
		"0.0.0.0", "0", "0.0", "::", "::ffff:0.0.0.0", "0:0:0:0:0:0:0:0", "0.1.2.3", "224.0.0.1", "239.255.255.250",
		"ff02::1", "ff02::1%eth0", "255.255.255.255", "4294967295", "fd00:ec2::254", "fd00:ec2::23", "::ffff:224.0.0.251",
	}
	for _, addr := range always {
		for _, relayed := range []bool{false, true} {
			if err := d.checkAllowed(ctx, "sourceIP", addr, relayed); sshdeck.ErrorCode(err) != sshdeck.Denied {
				t.Errorf("%s (relayed %t): %v, want Denied", addr, relayed, err)
			}
		}
	}
	for _, addr := range []string{"127.0.0.1", "127.1", "2130706433", "::ffff:127.0.0.1", "::1", "10.0.3.4", "localhost"} {
		if err := d.checkAllowed(ctx, "sourceIP", addr, false); sshdeck.ErrorCode(err) != sshdeck.Denied {
			t.Errorf("source %s: %v, want Denied by the deployment's ranges", addr, err)
		}
		if err := d.checkAllowed(ctx, "endpointIP", addr, true); err != nil {
			t.Errorf("endpoint %s: %v, want allowed (the deployment's ranges are the service's network)", addr, err)
		}
	}
	for _, addr := range []string{"192.0.2.1", "2001:db8::1", "fd00:ec3::1", "169.253.255.255", "223.255.255.255", "fec0::1"} {
		for _, relayed := range []bool{false, true} {
			if err := d.checkAllowed(ctx, "sourceIP", addr, relayed); err != nil {
				t.Errorf("%s (relayed %t): %v, want allowed", addr, relayed, err)
			}
		}
	}
}

// TestPath: the hops in the order they are dialled, each named for
// messages, remembered under its address and the path to it, and checked
// against the ranges of who dials it. Without jump hosts, the source and
// the endpoint are remembered as they always were.
func TestPath(t *testing.T) {
	hop := func(ip string, port int) sshdeck.TunnelHop { return sshdeck.TunnelHop{IP: ip, SSHPort: port} }
	direct := &sshdeck.TunnelSpec{Source: hop("203.0.113.7", 22), Endpoint: hop("10.0.0.5", 22)}
	other := &sshdeck.TunnelSpec{Source: hop("bastion.example.com", 2222), Endpoint: hop("10.0.0.5", 22)}
	chained := &sshdeck.TunnelSpec{
		Jumps:    []sshdeck.TunnelHop{hop("bastion.example.com", 22), hop("10.0.0.7", 22)},
		Source:   hop("10.0.0.9", 2222),
		Endpoint: hop("10.0.0.5", 22),
	}
	type want struct {
		name, knownAs string
		relayed       bool
	}
	for _, tc := range []struct {
		spec *sshdeck.TunnelSpec
		want []want
	}{
		{direct, []want{
			{"source 203.0.113.7:22", "203.0.113.7:22", false},
			{"endpoint 10.0.0.5:22", "10.0.0.5:22 via 203.0.113.7:22", true},
		}},
		{other, []want{
			{"source bastion.example.com:2222", "bastion.example.com:2222", false},
			{"endpoint 10.0.0.5:22", "10.0.0.5:22 via bastion.example.com:2222", true},
		}},
		{chained, []want{
			{"jump host 1 (bastion.example.com:22)", "bastion.example.com:22", false},
			{"jump host 2 (10.0.0.7:22 via bastion.example.com:22)", "10.0.0.7:22 via bastion.example.com:22", true},
			{"source 10.0.0.9:2222", "10.0.0.9:2222 via 10.0.0.7:22 via bastion.example.com:22", true},
			{"endpoint 10.0.0.5:22", "10.0.0.5:22 via 10.0.0.9:2222 via 10.0.0.7:22 via bastion.example.com:22", true},
		}},
	} {
		path := newPath(tc.spec, &sshdeck.TunnelCredentials{Jumps: make([]sshdeck.Credentials, len(tc.spec.Jumps))})
		var got []want
		for _, h := range path {
			got = append(got, want{h.name, h.knownAs, h.relayed})
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("path:\n got  %+v\n want %+v", got, tc.want)
		}
	}
}

// TestJumpHops: a request's jump hosts are checked as the source is, each
// error naming the hop by its place (jumps[i]), with the source's
// defaults; no more than the limit, whose error is a host route's; their
// credentials and the others' within maxSecrets together; and JSON never
// fills them.
func TestJumpHops(t *testing.T) {
	floor := MinRetryInterval * time.Millisecond
	jumps := []JumpHop{
		{IP: "bastion.example.com", Username: "a", Password: "pw"},
		{IP: "10.0.0.7", SSHPort: 2222, Username: "b", AuthMethod: "password", Password: "pw2", HostKey: "SHA256:" + strings.Repeat("A", 43)},
	}
	req := validRequest()
	req.Jumps = jumps
	_, spec, creds, err := req.parse(floor, 8)
	if err != nil {
		t.Fatal(err)
	}
	want := []sshdeck.TunnelHop{
		{IP: "bastion.example.com", SSHPort: 22, Username: "a", Auth: sshdeck.AuthPassword, KeyType: "auto"},
		{IP: "10.0.0.7", SSHPort: 2222, Username: "b", Auth: sshdeck.AuthPassword, KeyType: "auto", HostKey: "SHA256:" + strings.Repeat("A", 43)},
	}
	if !reflect.DeepEqual(spec.Jumps, want) || !reflect.DeepEqual(creds.Jumps, []sshdeck.Credentials{{Password: "pw"}, {Password: "pw2"}}) {
		t.Errorf("jumps parsed as %+v with %d credentials", spec.Jumps, len(creds.Jumps))
	}

	for _, tc := range []struct {
		change func(*ConnectRequest)
		code   sshdeck.Code
		names  string
	}{
		{func(r *ConnectRequest) { r.Jumps[1].Password = "" }, sshdeck.Invalid, "jumps[1].Password is required when jumps[1].AuthMethod is password"},
		{func(r *ConnectRequest) { r.Jumps[0].IP = "not an address!" }, sshdeck.Invalid, "jumps[0].IP"},
		{func(r *ConnectRequest) { r.Jumps[0].SSHPort = 70000 }, sshdeck.Invalid, "jumps[0].SSHPort"},
		{func(r *ConnectRequest) { r.Jumps[1].AuthMethod = "none" }, sshdeck.Invalid, "jumps[1].AuthMethod must be password or key"},
		{func(r *ConnectRequest) { r.Jumps[1].HostKey = "nope" }, sshdeck.Invalid, "jumps[1].HostKey"},
		{func(r *ConnectRequest) { r.Jumps = append(r.Jumps, make([]JumpHop, 7)...) }, sshdeck.LimitExceeded, "8"},
	} {
		req := validRequest()
		req.Jumps = slices.Clone(jumps)
		tc.change(req)
		_, _, _, err := req.parse(floor, 8)
		if sshdeck.ErrorCode(err) != tc.code || !strings.Contains(err.Error(), tc.names) {
			t.Errorf("%+v: %v, want %s naming %q", req.Jumps, err, tc.code, tc.names)
		}
	}

	// Within maxSecrets, and over it: what no request without jump hosts
	// can be.
	req = validRequest()
	for range 8 {
		req.Jumps = append(req.Jumps, JumpHop{IP: "192.0.2.9", Username: "c", Password: strings.Repeat("p", sshdeck.MaxPassword)})
	}
	if _, _, _, err := req.parse(floor, 8); err != nil {
		t.Errorf("8 jump hosts with %d-byte passwords: %v", sshdeck.MaxPassword, err)
	}
	// A deployment may allow longer chains (SSHDECK_LIMIT_JUMP_HOSTS).
	for range 56 {
		req.Jumps = append(req.Jumps, req.Jumps[0])
	}
	if _, _, _, err := req.parse(floor, 64); sshdeck.ErrorCode(err) != sshdeck.TooLarge || !strings.Contains(err.Error(), "66 hosts") {
		t.Errorf("64 jump hosts with %d-byte passwords: %v, want TooLarge", sshdeck.MaxPassword, err)
	}
	if most := 2 * (sshdeck.MaxKeySize + sshdeck.MaxPassword + sshdeck.MaxKeyPassword); most > maxSecrets {
		t.Errorf("maxSecrets %d: a request without jump hosts may have %d", maxSecrets, most)
	}

	var decoded ConnectRequest
	if err := json.Unmarshal([]byte(`{"Jumps":[{"IP":"192.0.2.1"}],"jumps":[{"IP":"192.0.2.1"}],"-":[{"IP":"192.0.2.1"}]}`), &decoded); err != nil || decoded.Jumps != nil {
		t.Errorf("JSON filled Jumps: %+v, %v", decoded.Jumps, err)
	}
}
