package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"testing"
)

// guardException is a Control Tower rule the design does not meet, on the
// resources it names (CDK paths), and why.
type guardException struct {
	resources *regexp.Regexp
	reason    string
}

// guardExceptions are the Control Tower failures accepted, each with its
// reason. README.md lists them too.
var guardExceptions = map[string]guardException{
	"cloudwatch_log_group_encrypted_check": {regexp.MustCompile(`.`),
		"CloudWatch Logs encrypts every log group at rest with its own keys; sshdeck never logs a credential " +
			"(tests check logs for them), and a customer-managed key for logs would cost a key and a key policy for the logs service."},
	"alb_http_to_https_redirection_check": {regexp.MustCompile(`^Sshdeck/Tunnel/LB/`),
		"Without a certificate (context certificateArn) the tunnel service can only be HTTP, and synth warns; " +
			"with one, port 80 redirects to HTTPS and the rule passes (the HTTPS synth below is checked too)."},
	"lambda_function_public_access_prohibited_check": {regexp.MustCompile(`^Sshdeck/(Api/Default/.*/ApiPermission|Authorizer/SshdeckTokenAuthorizer)`),
		"Each permission names apigateway.amazonaws.com with a SourceArn of this API's own method (or authorizer); " +
			"the rule only reads a SourceArn written as a plain string, and CDK writes it with Fn::Join."},
	"lambda_inside_vpc_check": {regexp.MustCompile(`^Sshdeck/[A-Za-z]+/Resource$`),
		"The functions call DynamoDB, KMS and GitHub only: in the VPC they would reach KMS and GitHub through the " +
			"NAT gateway (or paid interface endpoints) for no protection gained; nothing they call is in the VPC."},
	"s3_bucket_default_encryption_kms_check": {regexp.MustCompile(`^Sshdeck/AccessLogs/`),
		"Load balancers write access logs only to buckets encrypted with S3's keys (SSE-S3), not KMS."},
	"s3_bucket_logging_enabled_check": {regexp.MustCompile(`^Sshdeck/AccessLogs/`),
		"This bucket is the access log; logging access to it would need another bucket, and so on."},
	"s3_event_notifications_enabled_check": {regexp.MustCompile(`^Sshdeck/AccessLogs/`),
		"Nothing reacts to a new access log file; they are read when investigating."},
	"sqs_dlq_check": {regexp.MustCompile(`^Sshdeck/AuditDeadLetters/`),
		"This queue is itself the dead-letter queue of the audit events (the stream mapping's on-failure destination, the " +
			"audit log rule's dead-letter queue), read by an operator after its alarm; a queue behind it would be one more to watch."},
}

// TestControlTowerRules runs cfn-guard with AWS Control Tower's proactive
// controls (npm @cdklabs/cdk-validator-cfnguard, which make test installs)
// over the default template and the HTTPS one. Every failure must be a
// guardException on the resources it names; an exception that no longer
// fails must go.
func TestControlTowerRules(t *testing.T) {
	guard := filepath.Join("node_modules", "@cdklabs", "cdk-validator-cfnguard")
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	bin := filepath.Join(guard, "bin", "ubuntu", arch, "cfn-guard")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: run `npm ci` in infra/ (make test does)", bin)
	}
	dir := t.TempDir()
	synths := map[string]*synthesis{
		filepath.Join(dir, "http.template.json"):  synthDefault(t),
		filepath.Join(dir, "https.template.json"): synthHTTPS(t),
	}
	for path, s := range synths {
		if err := os.WriteFile(path, s.json, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(bin, "validate", "--rules", filepath.Join(guard, "rules", "control-tower", "cfn-guard"),
		"--data", dir, "--output-format", "json", "--show-summary", "none").Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("cfn-guard: %v", err)
	}

	failing := map[string]bool{}
	for report, err := range guardReports(out) {
		if err != nil {
			t.Fatalf("cfn-guard's output: %v", err)
		}
		paths := cdkPaths(synths[report.Name])
		for _, nc := range report.NotCompliant {
			rule := nc.Rule.Name
			failing[rule] = true
			exception, ok := guardExceptions[rule]
			if !ok {
				t.Errorf("%s fails Control Tower rule %s: fix it, or add it to guardExceptions with its reason", filepath.Base(report.Name), rule)
				continue
			}
			for _, id := range resourcesIn(nc.Rule.Checks) {
				if path := paths[id]; !exception.resources.MatchString(path) {
					t.Errorf("%s: rule %s fails on %s (%s), which its exception does not cover", filepath.Base(report.Name), rule, id, path)
				}
			}
		}
	}
	for _, rule := range slices.Sorted(maps.Keys(guardExceptions)) {
		if !failing[rule] {
			t.Errorf("rule %s no longer fails: remove its exception", rule)
		}
	}
}

// guardReport is the part of cfn-guard's JSON report of one data file
// that the test reads.
type guardReport struct {
	Name         string `json:"name"`
	NotCompliant []struct {
		Rule struct {
			Name   string          `json:"name"`
			Checks json.RawMessage `json:"checks"`
		} `json:"Rule"`
	} `json:"not_compliant"`
}

// guardReports reads cfn-guard's output: one JSON report per data file and
// rule file, one after the other.
func guardReports(out []byte) func(func(guardReport, error) bool) {
	return func(yield func(guardReport, error) bool) {
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var r guardReport
			err := dec.Decode(&r)
			if err == io.EOF || !yield(r, err) || err != nil {
				return
			}
		}
	}
}

var resourcePath = regexp.MustCompile(`/Resources/([A-Za-z0-9]+)`)

// resourcesIn returns the logical ids a rule's failed checks point at.
func resourcesIn(checks []byte) []string {
	var ids []string
	for _, m := range resourcePath.FindAllSubmatch(checks, -1) {
		if id := string(m[1]); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// cdkPaths maps a template's logical ids to their CDK paths.
func cdkPaths(s *synthesis) map[string]string {
	paths := map[string]string{}
	for id, r := range s.Resources {
		paths[id], _ = r.Metadata["aws:cdk:path"].(string)
	}
	return paths
}
