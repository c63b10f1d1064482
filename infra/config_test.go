package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
)

func TestConfigFromReadsTheContext(t *testing.T) {
	cfg, err := ConfigFrom(contextApp(map[string]any{
		"stackName": "Staging", "region": "eu-west-1", "account": "111111111111",
		"certificateArn": testCertificateARN, "tunnelDomainName": testTunnelDomain,
		"releasesRepo": testReleasesRepo, "releasesApiUrl": "https://api.example.com", "alertsUrl": testAlertsURL,
		"tunnelDenyCidrs":  "10.0.0.0/8",
		"logRetentionDays": "30", "throttleRate": 7, "throttleBurst": "9", "tunnelTasks": 2, "tunnelMaxTasks": "3",
		"loginThrottleRate": "3", "loginThrottleBurst": 4,
		"allowHttp": "true", "waf": "false", "wafRate": "300",
	}).Node())
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		StackName: "Staging", Account: "111111111111", Region: "eu-west-1", Root: cfg.Root,
		CertificateARN: testCertificateARN, TunnelDomainName: testTunnelDomain,
		ReleasesRepo: testReleasesRepo, ReleasesAPIURL: "https://api.example.com", AlertsURL: testAlertsURL,
		TunnelDenyCIDRs:  "10.0.0.0/8",
		LogRetentionDays: 30, ThrottleRate: 7, ThrottleBurst: 9, TunnelTasks: 2, TunnelMaxTasks: 3,
		LoginThrottleRate: 3, LoginThrottleBurst: 4,
		AllowHTTP: true, WAF: false, WAFRate: 300,
	}
	if cfg != want {
		t.Errorf("ConfigFrom = %+v\nwant %+v", cfg, want)
	}
	if _, err := os.Stat(filepath.Join(cfg.Root, "cdk.json")); err != nil {
		t.Errorf("Root %s is not the repository root: %v", cfg.Root, err)
	}
}

func TestConfigFromDefaults(t *testing.T) {
	t.Setenv("CDK_DEFAULT_ACCOUNT", "")
	t.Setenv("CDK_DEFAULT_REGION", "")
	// A certificate is the one setting without a default: allowHttp says
	// to go without.
	cfg, err := ConfigFrom(contextApp(map[string]any{"allowHttp": true}).Node())
	if err != nil {
		t.Fatal(err)
	}
	want := defaults
	want.AllowHTTP = true
	want.Root, want.Region = cfg.Root, "us-east-1"
	if cfg != want {
		t.Errorf("ConfigFrom with no context = %+v\nwant %+v", cfg, want)
	}
	if cfg.StackName != "Sshdeck" || cfg.LogRetentionDays != 365 || cfg.ThrottleRate != 50 || cfg.ThrottleBurst != 100 ||
		cfg.LoginThrottleRate != 10 || cfg.LoginThrottleBurst != 20 ||
		cfg.TunnelTasks != 1 || cfg.TunnelMaxTasks != 4 || !cfg.WAF || cfg.WAFRate != 1000 {
		t.Errorf("defaults changed: %+v", cfg)
	}
}

// TestConfigFromRefusesBadContext: a bad setting fails before synth, with
// an error that names it.
func TestConfigFromRefusesBadContext(t *testing.T) {
	for _, tc := range []struct {
		context map[string]any
		setting string
	}{
		{map[string]any{"logRetentionDays": 10}, "logRetentionDays"},
		{map[string]any{"logRetentionDays": "a year"}, "logRetentionDays"},
		{map[string]any{"tunnelTasks": 0}, "tunnelTasks"},
		{map[string]any{"tunnelTasks": 5, "tunnelMaxTasks": 4}, "tunnelMaxTasks"},
		{map[string]any{"throttleRate": "abc"}, "throttleRate"},
		{map[string]any{"throttleRate": 0}, "throttleRate"},
		{map[string]any{"throttleBurst": -1}, "throttleBurst"},
		{map[string]any{"throttleBurst": true}, "throttleBurst"},
		{map[string]any{"loginThrottleRate": 0}, "loginThrottleRate"},
		{map[string]any{"loginThrottleBurst": "twenty"}, "loginThrottleBurst"},
		{map[string]any{"allowHttp": "yes please"}, "allowHttp"},
		{map[string]any{"waf": 1}, "waf"},
		{map[string]any{"wafRate": 9}, "wafRate"},
		{map[string]any{"wafRate": "lots"}, "wafRate"},
	} {
		if _, ok := tc.context["allowHttp"]; !ok {
			tc.context["allowHttp"] = true
		}
		_, err := ConfigFrom(contextApp(tc.context).Node())
		if err == nil || !strings.Contains(err.Error(), tc.setting) {
			t.Errorf("ConfigFrom(%v) = %v, want an error naming %s", tc.context, err, tc.setting)
		}
	}
}

// TestConfigFromRefusesHTTPWithoutSaying: without certificateArn, synth
// refuses unless the context says allowHttp=true, with a sentence naming
// both; with a certificate, allowHttp changes nothing.
func TestConfigFromRefusesHTTPWithoutSaying(t *testing.T) {
	for _, context := range []map[string]any{nil, {"allowHttp": false}, {"allowHttp": "false"}} {
		_, err := ConfigFrom(contextApp(context).Node())
		if err == nil || !strings.Contains(err.Error(), "certificateArn") || !strings.Contains(err.Error(), "allowHttp=true") {
			t.Errorf("ConfigFrom(%v) = %v, want a refusal naming certificateArn and allowHttp=true", context, err)
		}
	}
	for _, context := range []map[string]any{{"allowHttp": true}, {"allowHttp": "true"}, {"certificateArn": testCertificateARN}} {
		if _, err := ConfigFrom(contextApp(context).Node()); err != nil {
			t.Errorf("ConfigFrom(%v) = %v", context, err)
		}
	}
}

// contextApp is an app with the given context, for ConfigFrom only: it is
// never synthesized.
func contextApp(context map[string]any) awscdk.App {
	if context == nil {
		context = map[string]any{}
	}
	return awscdk.NewApp(&awscdk.AppProps{Context: &context})
}
