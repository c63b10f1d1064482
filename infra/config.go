package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/aws/constructs-go/constructs/v10"
)

// Config is every setting of a deployment. Each comes from the CDK context
// (cdk.json, or `-c name=value` on the command line, which make deploy
// passes through as CONTEXT), with the default below when absent.
type Config struct {
	// StackName names the stack; deploy several (staging, production) into
	// one account under different names.
	StackName string
	// Account and Region are where the stack goes: the context's account
	// and region, else cdk's (CDK_DEFAULT_ACCOUNT and CDK_DEFAULT_REGION,
	// from your AWS profile), else no account and us-east-1, which is
	// enough to synthesize with no AWS set-up at all. The load balancer's
	// access logs need a region at synth (the log writer's principal
	// differs by region).
	Account, Region string
	// Root is the repository root: the functions' bootstraps are read from
	// Root/build/<name>, the tunnel service's image is built from Root.
	Root string

	// CertificateARN, when set, puts the tunnel service's load balancer on
	// HTTPS with that ACM certificate. Without it the service would be
	// plain HTTP, carrying tokens and SSH passwords in clear: synth refuses
	// unless AllowHTTP says so (and then warns).
	CertificateARN string
	// AllowHTTP (context allowHttp=true) lets the tunnel service go without
	// a certificate, on plain HTTP: for a test deployment only.
	AllowHTTP bool
	// TunnelDomainName is the name clients use for the tunnel service (a
	// CNAME to its load balancer, matching the certificate): tunnel_url
	// says it instead of the load balancer's own name.
	TunnelDomainName string

	// ReleasesRepo, ReleasesAPIURL and AlertsURL become the releases-feed's
	// and the alert routes' SSHDECK_RELEASES_REPO, SSHDECK_RELEASES_API_URL
	// and SSHDECK_ALERTS_URL (see the README's settings).
	ReleasesRepo, ReleasesAPIURL, AlertsURL string
	// TunnelDenyCIDRs is the tunnel service's SSHDECK_TUNNEL_DENY_CIDRS.
	TunnelDenyCIDRs string

	// LogRetentionDays is how long every log group keeps its logs: a year
	// by default, the least AWS Control Tower accepts.
	LogRetentionDays int
	// ThrottleRate (requests/s) and ThrottleBurst are the API stage's
	// limits, over all callers.
	ThrottleRate, ThrottleBurst int
	// LoginThrottleRate (requests/s) and LoginThrottleBurst are POST
	// /auth/login's own limits, over all callers, in place of the
	// stage's: each login costs an argon2id hash.
	LoginThrottleRate, LoginThrottleBurst int
	// TunnelTasks and TunnelMaxTasks bound the tunnel service's Fargate
	// tasks; it scales out on CPU between them.
	TunnelTasks, TunnelMaxTasks int

	// WAF puts an AWS WAF web ACL in front of the REST API's stage and the
	// tunnel service's load balancer: a rate-based rule that answers 429 to
	// a client (an IP address) past WAFRate requests in 5 minutes. On by
	// default; context waf=false leaves it out (and saves its cost).
	WAF bool
	// WAFRate is the rule's limit: requests per client IP address in any 5
	// minutes, over both services (one web ACL counts them together).
	WAFRate int
}

// defaults are the settings of a deployment that names none.
var defaults = Config{
	StackName:        "Sshdeck",
	LogRetentionDays: 365,
	ThrottleRate:     50,
	ThrottleBurst:    100,
	// A login is some 135 ms of a 256 MB function's CPU (argon2id):
	// 10 a second keep about 2 such functions busy.
	LoginThrottleRate:  10,
	LoginThrottleBurst: 20,
	TunnelTasks:        1,
	TunnelMaxTasks:     4,
	WAF:                true,
	WAFRate:            1000,
}

// ConfigFrom reads the Config from the context of node (the app).
func ConfigFrom(node constructs.Node) (Config, error) {
	c := defaults
	root, err := repositoryRoot()
	if err != nil {
		return c, err
	}
	c.Root = root
	text := func(name string, to *string) {
		if v, ok := node.TryGetContext(&name).(string); ok && v != "" {
			*to = v
		}
	}
	var errs []error
	number := func(name string, to *int) {
		switch v := node.TryGetContext(&name).(type) {
		case nil:
		case float64:
			*to = int(v)
		case string:
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("context %s: %q is not a whole number", name, v))
			}
			*to = n
		default:
			errs = append(errs, fmt.Errorf("context %s: %v is not a whole number", name, v))
		}
	}
	flag := func(name string, to *bool) {
		switch v := node.TryGetContext(&name).(type) {
		case nil:
		case bool:
			*to = v
		case string:
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("context %s: %q is not true or false", name, v))
			}
			*to = b
		default:
			errs = append(errs, fmt.Errorf("context %s: %v is not true or false", name, v))
		}
	}
	c.Account, c.Region = os.Getenv("CDK_DEFAULT_ACCOUNT"), os.Getenv("CDK_DEFAULT_REGION")
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	text("account", &c.Account)
	text("region", &c.Region)
	text("stackName", &c.StackName)
	text("certificateArn", &c.CertificateARN)
	text("tunnelDomainName", &c.TunnelDomainName)
	text("releasesRepo", &c.ReleasesRepo)
	text("releasesApiUrl", &c.ReleasesAPIURL)
	text("alertsUrl", &c.AlertsURL)
	text("tunnelDenyCidrs", &c.TunnelDenyCIDRs)
	number("logRetentionDays", &c.LogRetentionDays)
	number("throttleRate", &c.ThrottleRate)
	number("throttleBurst", &c.ThrottleBurst)
	number("loginThrottleRate", &c.LoginThrottleRate)
	number("loginThrottleBurst", &c.LoginThrottleBurst)
	number("tunnelTasks", &c.TunnelTasks)
	number("tunnelMaxTasks", &c.TunnelMaxTasks)
	flag("allowHttp", &c.AllowHTTP)
	flag("waf", &c.WAF)
	number("wafRate", &c.WAFRate)
	if len(errs) > 0 {
		return c, errs[0]
	}
	return c, c.check()
}

func (c Config) check() error {
	switch {
	case c.ThrottleRate < 1 || c.ThrottleBurst < 1:
		return fmt.Errorf("context throttleRate and throttleBurst must be at least 1, not %d and %d", c.ThrottleRate, c.ThrottleBurst)
	case c.LoginThrottleRate < 1 || c.LoginThrottleBurst < 1:
		return fmt.Errorf("context loginThrottleRate and loginThrottleBurst must be at least 1, not %d and %d", c.LoginThrottleRate, c.LoginThrottleBurst)
	case c.TunnelTasks < 1 || c.TunnelMaxTasks < c.TunnelTasks:
		return fmt.Errorf("context tunnelTasks must be at least 1 and tunnelMaxTasks at least tunnelTasks, not %d and %d", c.TunnelTasks, c.TunnelMaxTasks)
	case c.CertificateARN == "" && !c.AllowHTTP:
		return errors.New("the tunnel service needs a certificate: give context certificateArn=arn:aws:acm:... " +
			"(without it the service is plain HTTP, carrying bearer tokens and SSH passwords in clear), " +
			"or say allowHttp=true for a deployment that may be plain HTTP")
	case c.WAF && (c.WAFRate < wafMinRate || c.WAFRate > wafMaxRate):
		return fmt.Errorf("context wafRate must be between %d and %d requests per client in 5 minutes (AWS WAF's bounds), not %d", wafMinRate, wafMaxRate, c.WAFRate)
	case retention(c.LogRetentionDays) == "":
		return fmt.Errorf("context logRetentionDays: CloudWatch Logs keeps logs for one of %v days, not %d", retentionChoices(), c.LogRetentionDays)
	}
	for _, name := range functionNames() {
		bootstrap := filepath.Join(c.Root, "build", name, "bootstrap")
		if _, err := os.Stat(bootstrap); err != nil {
			return fmt.Errorf("%s is missing: run `make build` (make synth and make deploy do) before the CDK app", bootstrap)
		}
	}
	return nil
}

// repositoryRoot is the directory of cdk.json: the working directory when
// cdk runs the app, its parent when go test runs infra's tests.
func repositoryRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if _, err := os.Stat(filepath.Join(d, "cdk.json")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("no cdk.json in %s or its parent: run the app from the repository (make synth)", dir)
}
