package main

// The tests of the CDK app read the synthesized CloudFormation template.
// Synthesis takes seconds (jsii starts Node.js), so each configuration is
// synthesized once, on first use, and every test reads the same result:
// synthDefault (the defaults, plus releasesRepo and alertsUrl, which only
// their functions may see, and allowHttp, which a deployment without a
// certificate must say) and synthHTTPS (a certificate and a domain name for
// the tunnel service, every number moved off its default, and no WAF).

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"
)

const (
	testCertificateARN = "arn:aws:acm:us-east-1:111111111111:certificate/abcd"
	testTunnelDomain   = "tunnels.example.com"
	testReleasesRepo   = "golang/go"
	testAlertsURL      = "https://example.com/alerts.json"
)

var (
	defaultSynth = &synthOnce{context: map[string]any{
		"releasesRepo": testReleasesRepo,
		"alertsUrl":    testAlertsURL,
		"allowHttp":    "true",
	}}
	httpsSynth = &synthOnce{context: map[string]any{
		"certificateArn":   testCertificateARN,
		"tunnelDomainName": testTunnelDomain,
		// -c on cdk's command line gives strings, cdk.json numbers: both.
		"throttleRate":       "7",
		"throttleBurst":      9,
		"loginThrottleRate":  "3",
		"loginThrottleBurst": 4,
		"tunnelTasks":        "2",
		"tunnelMaxTasks":     3,
		// Off the default, yet at least the year Control Tower asks for
		// (guard_test.go checks this template too).
		"logRetentionDays": 731,
		// cdk.json gives a boolean, -c a string.
		"waf": false,
	}}
)

// synthDefault is the stack synthesized with the default settings.
func synthDefault(t *testing.T) *synthesis { t.Helper(); return defaultSynth.get(t) }

// synthHTTPS is the stack synthesized with a certificate for the tunnel
// service and no setting at its default.
func synthHTTPS(t *testing.T) *synthesis { t.Helper(); return httpsSynth.get(t) }

type synthOnce struct {
	context map[string]any
	once    sync.Once
	s       *synthesis
	err     error
}

func (o *synthOnce) get(t *testing.T) *synthesis {
	t.Helper()
	o.once.Do(func() { o.s, o.err = synthesize(o.context) })
	if o.err != nil {
		t.Fatalf("synthesizing the stack with context %v: %v", o.context, o.err)
	}
	return o.s
}

// synthesis is one synthesized stack: its configuration, its template (as
// assertions reads it, and as plain Go values) and its annotations.
type synthesis struct {
	cfg         Config
	json        []byte // the template
	template    assertions.Template
	annotations assertions.Annotations
	Resources   map[string]resource
	Outputs     map[string]struct{ Value any }
}

type resource struct {
	Type                string
	Properties          map[string]any
	Metadata            map[string]any
	DeletionPolicy      string
	UpdateReplacePolicy string
}

// synthesize builds the stack as main does, in an app of its own.
func synthesize(context map[string]any) (s *synthesis, err error) {
	// jsii reports a JavaScript error as a panic.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	out, err := os.MkdirTemp("", "sshdeck-infra-test-")
	if err != nil {
		return nil, err
	}
	// Everything the tests read is in memory once synthesized.
	defer os.RemoveAll(out)

	ctx := map[string]any{
		// The assets' source paths (build/<name>) in each resource's
		// metadata, as cdk synth records them, and no copy of them (some
		// 200 MB) into the output directory.
		"aws:cdk:enable-asset-metadata": true,
		"aws:cdk:disable-asset-staging": true,
		// Each resource's CDK path, as cdk synth records it.
		"aws:cdk:enable-path-metadata": true,
	}
	for k, v := range context {
		ctx[k] = v
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(out)})
	cfg, err := ConfigFrom(app.Node())
	if err != nil {
		return nil, err
	}
	stack := NewStack(app, cfg)
	s = &synthesis{cfg: cfg, template: assertions.Template_FromStack(stack, nil)}
	s.annotations = assertions.Annotations_FromStack(stack)
	if s.json, err = json.Marshal(s.template.ToJSON()); err != nil {
		return nil, err
	}
	return s, json.Unmarshal(s.json, s)
}

// must runs an assertion of awscdk/v2/assertions, which panics when it
// fails (and would end the test binary), and reports its failure as an
// error of t instead.
func must(t *testing.T, what string, assertion func()) {
	t.Helper()
	if failure := catch(assertion); failure != nil {
		t.Errorf("%s: %v", what, failure)
	}
}

// catch runs f and returns what it panicked with.
func catch(f func()) (failure any) {
	defer func() { failure = recover() }()
	f()
	return nil
}

// ids returns the logical ids of the resources of type typ, sorted.
func (s *synthesis) ids(typ string) []string {
	var ids []string
	for id, r := range s.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// only returns the logical id of the one resource of type typ.
func (s *synthesis) only(t *testing.T, typ string) (string, resource) {
	t.Helper()
	ids := s.ids(typ)
	if len(ids) != 1 {
		t.Fatalf("%d resources of type %s (%v), want exactly one", len(ids), typ, ids)
	}
	return ids[0], s.Resources[ids[0]]
}

// refID is the logical id v refers to as {"Ref": id}, or "".
func refID(v any) string {
	m, _ := v.(map[string]any)
	id, _ := m["Ref"].(string)
	return id
}

// getAtt is the logical id and attribute v reads as {"Fn::GetAtt": [id,
// attribute]}, or "".
func getAtt(v any) (id, attribute string) {
	m, _ := v.(map[string]any)
	args, _ := m["Fn::GetAtt"].([]any)
	if len(args) != 2 {
		return "", ""
	}
	id, _ = args[0].(string)
	attribute, _ = args[1].(string)
	return id, attribute
}

// isARN tells whether v is exactly the ARN of resource id.
func isARN(v any, id string) bool {
	got, attribute := getAtt(v)
	return got == id && attribute == "Arn"
}

// refersTo tells whether v, anywhere inside, refers to resource id (Ref,
// Fn::GetAtt or Fn::Sub).
func refersTo(v any, id string) bool {
	switch v := v.(type) {
	case map[string]any:
		if refID(v) == id {
			return true
		}
		if got, _ := getAtt(v); got == id {
			return true
		}
		if sub, ok := v["Fn::Sub"].(string); ok && strings.Contains(sub, "${"+id) {
			return true
		}
		for _, e := range v {
			if refersTo(e, id) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(v, func(e any) bool { return refersTo(e, id) })
	}
	return false
}

// getAtts returns the logical ids that v reads an attribute of, anywhere
// inside, each once.
func getAtts(v any) []string {
	var ids []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if id, _ := getAtt(v); id != "" && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return ids
}

// render writes a CloudFormation value as the string it becomes, with
// ${id} and ${id.Attribute} for what is known at deployment only.
func render(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if id := refID(v); id != "" {
			return "${" + id + "}"
		}
		if id, attribute := getAtt(v); id != "" {
			return "${" + id + "." + attribute + "}"
		}
		if join, ok := v["Fn::Join"].([]any); ok && len(join) == 2 {
			sep, _ := join[0].(string)
			parts, _ := join[1].([]any)
			rendered := make([]string, len(parts))
			for i, p := range parts {
				rendered[i] = render(p)
			}
			return strings.Join(rendered, sep)
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// strs reads a string or a list of strings (an IAM Action, say).
func strs(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// list reads a value or a list of values (an IAM Resource, say).
func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

// property reads a nested property: property(p, "A", "B") is p.A.B.
func property(v any, path ...string) any {
	for _, name := range path {
		m, _ := v.(map[string]any)
		v = m[name]
	}
	return v
}

func TestOutputs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		s         *synthesis
		tunnelURL func(loadBalancer string) string
	}{
		{"default", synthDefault(t), func(lb string) string { return "http://${" + lb + ".DNSName}" }},
		{"https", synthHTTPS(t), func(string) string { return "https://" + testTunnelDomain }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			names := slices.Sorted(maps.Keys(s.Outputs))
			if want := []string{"AlarmTopicArn", "AuditLogGroup", "BaseUrl", "EventBusArn", "EventBusName", "TableName", "TunnelDashboardUrl", "TunnelLoadBalancer", "TunnelUrl", "TunnelsStuckAlarmArn"}; !slices.Equal(names, want) {
				t.Errorf("outputs %v, want %v", names, want)
			}
			apiID, _ := s.only(t, "AWS::ApiGateway::RestApi")
			lbID, _ := s.only(t, "AWS::ElasticLoadBalancingV2::LoadBalancer")
			tableID, _ := s.only(t, "AWS::DynamoDB::Table")

			// Clients append /ssh/db/host and so on to base_url.
			base := render(s.Outputs["BaseUrl"].Value)
			wantBase := "https://${" + apiID + "}.execute-api." + s.cfg.Region + ".${AWS::URLSuffix}/" + stageName
			if base != wantBase || !strings.HasSuffix(base, "/v1") {
				t.Errorf("BaseUrl is %s, want %s (ending in /v1, no trailing slash)", base, wantBase)
			}
			if got, wantTunnel := render(s.Outputs["TunnelUrl"].Value), tc.tunnelURL(lbID); got != wantTunnel {
				t.Errorf("TunnelUrl is %s, want %s", got, wantTunnel)
			}
			if got, want := render(s.Outputs["TunnelLoadBalancer"].Value), "${"+lbID+".DNSName}"; got != want {
				t.Errorf("TunnelLoadBalancer is %s, want %s", got, want)
			}
			if got := refID(s.Outputs["TableName"].Value); got != tableID {
				t.Errorf("TableName is %s, want a Ref to the table %s", render(s.Outputs["TableName"].Value), tableID)
			}
			busID, _ := s.only(t, "AWS::Events::EventBus")
			topicID, _ := s.only(t, "AWS::SNS::Topic")
			for output, want := range map[string]string{
				"EventBusName": "${" + busID + "}", "EventBusArn": "${" + busID + ".Arn}",
				"AuditLogGroup": "${" + s.auditLogGroup(t) + "}", "AlarmTopicArn": "${" + topicID + "}",
			} {
				if got := render(s.Outputs[output].Value); got != want {
					t.Errorf("%s is %s, want %s", output, got, want)
				}
			}
		})
	}
}

// TestNoUnsuppressedNagFindings: every cdk-nag AwsSolutions finding is
// either fixed or suppressed with its reason (nag.go), in both
// configurations.
func TestNoUnsuppressedNagFindings(t *testing.T) {
	finding := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
	for _, synth := range []struct {
		name string
		s    *synthesis
	}{{"default", synthDefault(t)}, {"https", synthHTTPS(t)}} {
		name, s := synth.name, synth.s
		for _, level := range []struct {
			name string
			find func(*string, any) *[]*cxapi.SynthesisMessage
		}{
			{"error", s.annotations.FindError},
			{"warning", s.annotations.FindWarning},
		} {
			var messages []*cxapi.SynthesisMessage
			must(t, name+" "+level.name+"s", func() { messages = *level.find(jsii.String("*"), finding) })
			for _, m := range messages {
				t.Errorf("%s synth: unsuppressed cdk-nag %s on %s: %v", name, level.name, *m.Id, m.Entry.Data)
			}
		}
	}
}
