package config

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestLoadDefaults(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Data != DefaultData || c.Addr != DefaultAddr || c.TunnelAddr != DefaultTunnelAddr {
		t.Errorf("defaults: %+v", c)
	}
	if c.Limits != DefaultLimits {
		t.Errorf("limits %+v, want the defaults %+v", c.Limits, DefaultLimits)
	}
	if c.TunnelDeny != nil || c.TunnelLeaseTTL != 0 || c.Table != "" {
		t.Errorf("unset optional settings: %+v", c)
	}
}

func TestLoad(t *testing.T) {
	c, err := Load(env(map[string]string{
		Data: "/var/lib/sshdeck", Table: "deck", KMSKeyID: "alias/deck",
		TunnelDenyCIDRs: " 10.0.0.0/8, fd00::1/8 ,", TunnelLeaseTTL: "3s",
		AWSRegion: "eu-west-1", DynamoDBEndpoint: "http://127.0.0.1:1",
		LimitHosts: "5", LimitStreams: "2",
		EventBus: "deck-audit", EventBridgeEndpoint: "http://127.0.0.1:2",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	if len(c.TunnelDeny) != 2 || c.TunnelDeny[0] != want[0] || c.TunnelDeny[1] != want[1] {
		t.Errorf("TunnelDeny = %v, want %v (masked)", c.TunnelDeny, want)
	}
	if c.Data != "/var/lib/sshdeck" || c.Table != "deck" || c.KMSKeyID != "alias/deck" || c.TunnelLeaseTTL != 3*time.Second ||
		c.AWS.Region != "eu-west-1" || c.AWS.DynamoDBEndpoint != "http://127.0.0.1:1" ||
		c.Limits.Hosts != 5 || c.Limits.Streams != 2 || c.Limits.Tunnels != DefaultLimits.Tunnels ||
		c.EventBus != "deck-audit" || c.AWS.EventBridgeEndpoint != "http://127.0.0.1:2" {
		t.Errorf("Load = %+v", c)
	}
}

// TestLoadNamesTheSetting: a malformed value fails with its setting's name.
func TestLoadNamesTheSetting(t *testing.T) {
	for name, value := range map[string]string{
		TunnelDenyCIDRs: "10.0.0.0/8,not-a-range",
		TunnelLeaseTTL:  "100ms",
		LimitHosts:      "0",
		LimitTunnels:    "many",
	} {
		_, err := Load(env(map[string]string{name: value}))
		if err == nil || !strings.HasPrefix(err.Error(), name+": ") {
			t.Errorf("%s=%q: error %v, want one naming %s", name, value, err, name)
		}
	}
}
