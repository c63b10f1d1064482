package tunnel

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

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
		_, spec, _, err := req.parse(floor)
		if err != nil || spec.RetryInterval != tc.want {
			t.Errorf("retryInterval %v: %v, %v; want %v", deref(tc.ms), spec.RetryInterval, err, tc.want)
		}
	}
	for _, ms := range []int{3_600_001, 1 << 62} {
		req := validRequest()
		req.RetryInterval = &ms
		if _, _, _, err := req.parse(floor); sshdeck.ErrorCode(err) != sshdeck.Invalid || !strings.Contains(err.Error(), "retryInterval") {
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

// TestDeniedRanges: the source is checked against AlwaysDeny and the
// deployment's ranges, the endpoint against AlwaysDeny only; every
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
		for _, role := range []string{roleSource, roleEndpoint} {
			if err := d.checkAllowed(ctx, role+"IP", addr, role); sshdeck.ErrorCode(err) != sshdeck.Denied {
				t.Errorf("%s %s: %v, want Denied", role, addr, err)
			}
		}
	}
	for _, addr := range []string{"127.0.0.1", "127.1", "2130706433", "::ffff:127.0.0.1", "::1", "10.0.3.4", "localhost"} {
		if err := d.checkAllowed(ctx, "sourceIP", addr, roleSource); sshdeck.ErrorCode(err) != sshdeck.Denied {
			t.Errorf("source %s: %v, want Denied by the deployment's ranges", addr, err)
		}
		if err := d.checkAllowed(ctx, "endpointIP", addr, roleEndpoint); err != nil {
			t.Errorf("endpoint %s: %v, want allowed (the deployment's ranges are the service's network)", addr, err)
		}
	}
	for _, addr := range []string{"192.0.2.1", "2001:db8::1", "fd00:ec3::1", "169.253.255.255", "223.255.255.255", "fec0::1"} {
		for _, role := range []string{roleSource, roleEndpoint} {
			if err := d.checkAllowed(ctx, role+"IP", addr, role); err != nil {
				t.Errorf("%s %s: %v, want allowed", role, addr, err)
			}
		}
	}
}

func TestEndpointKnownAs(t *testing.T) {
	src1 := hop{TunnelHop: sshdeck.TunnelHop{IP: "203.0.113.7", SSHPort: 22}}
	src2 := hop{TunnelHop: sshdeck.TunnelHop{IP: "bastion.example.com", SSHPort: 2222}}
	dst := hop{TunnelHop: sshdeck.TunnelHop{IP: "10.0.0.5", SSHPort: 22}}
	a, b := endpointKnownAs(src1, dst), endpointKnownAs(src2, dst)
	if a == b || a == dst.addr() || a != "10.0.0.5:22 via 203.0.113.7:22" || b != "10.0.0.5:22 via bastion.example.com:2222" {
		t.Errorf("endpoint keys: %q and %q", a, b)
	}
}
