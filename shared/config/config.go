// Package config is every setting of sshdeck: its name in the environment
// (the same in every binary, and in the CDK app that sets them), its type,
// its default and its check. Load reads them all at once and fails with a
// sentence naming the first malformed one, so that a binary stops before it
// serves anything. It imports the standard library only: the CDK module
// reads the names from here.
//
// Whether a setting is required depends on the binary (a Lambda function
// needs SSHDECK_TABLE, `sshdeck serve` never does): the wiring that needs a
// setting checks it (shared/app).
package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// The settings' names in the environment.
const (
	// Data is the data directory of the embedded store and its key file.
	Data = "SSHDECK_DATA"
	// Addr is where `sshdeck serve` serves the base_url API.
	Addr = "SSHDECK_ADDR"
	// TunnelAddr is where the tunnel service listens.
	TunnelAddr = "SSHDECK_TUNNEL_ADDR"
	// Table is a deployment's DynamoDB table; without it, the embedded store.
	Table = "SSHDECK_TABLE"
	// KMSKeyID is the KMS key that wraps the data keys of credentials.
	KMSKeyID = "SSHDECK_KMS_KEY_ID"
	// ReleasesRepo is the owner/name of the releases feed's repository.
	ReleasesRepo = "SSHDECK_RELEASES_REPO"
	// ReleasesAPIURL is the GitHub API of the releases feed.
	ReleasesAPIURL = "SSHDECK_RELEASES_API_URL"
	// GitHubToken raises GitHub's rate limit for the feed.
	GitHubToken = "SSHDECK_GITHUB_TOKEN"
	// AlertsURL is a remote JSON list of alerts.
	AlertsURL = "SSHDECK_ALERTS_URL"
	// TunnelDenyCIDRs are ranges the tunnel service never dials itself (a
	// tunnel's source), added to those it always denies (tunnel.AlwaysDeny).
	TunnelDenyCIDRs = "SSHDECK_TUNNEL_DENY_CIDRS"
	// TunnelLeaseTTL is how long a dead replica's autoStart tunnels wait
	// before another replica takes them over.
	TunnelLeaseTTL = "SSHDECK_TUNNEL_LEASE_TTL"
	// ReplicaID names a tunnel service replica in leases.
	ReplicaID = "SSHDECK_REPLICA_ID"
	// LoginTTL is how long a token issued by POST /auth/login lasts.
	LoginTTL = "SSHDECK_LOGIN_TTL"
	// AuditDays is how long audit records are kept, in days.
	AuditDays = "SSHDECK_AUDIT_DAYS"
	// WebhookURL receives every audit record as an event (locally);
	// WebhookSecret signs them (HMAC-SHA256).
	WebhookURL    = "SSHDECK_WEBHOOK_URL"
	WebhookSecret = "SSHDECK_WEBHOOK_SECRET"
	// EventBus is the EventBridge bus the audit records go to in AWS (the
	// stream consumer's).
	EventBus = "SSHDECK_EVENT_BUS"
	// TrustForwardedFor: the tunnel service is behind a load balancer,
	// whose X-Forwarded-For names the caller ("true"; the CDK app sets it).
	TrustForwardedFor = "SSHDECK_TRUST_FORWARDED_FOR"

	// The limits that keep one user from exhausting a deployment shared
	// by many (API.md, "Limits, paging and tenancy"); see Limits.
	LimitHosts     = "SSHDECK_LIMIT_HOSTS"
	LimitTunnels   = "SSHDECK_LIMIT_TUNNELS"
	LimitStreams   = "SSHDECK_LIMIT_STREAMS"
	LimitTokens    = "SSHDECK_LIMIT_TOKENS"
	LimitShortcuts = "SSHDECK_LIMIT_SHORTCUTS"
	LimitRecent    = "SSHDECK_LIMIT_RECENT"
	LimitJumpHosts = "SSHDECK_LIMIT_JUMP_HOSTS"
	LimitForwards  = "SSHDECK_LIMIT_FORWARDS"

	// AWS's own names: Lambda sets the region and the role's credentials;
	// the endpoints point the SDK at an emulator (tests, benchmarks).
	AWSRegion          = "AWS_REGION"
	AWSAccessKeyID     = "AWS_ACCESS_KEY_ID"
	AWSSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	AWSSessionToken    = "AWS_SESSION_TOKEN"
	DynamoDBEndpoint   = "AWS_ENDPOINT_URL_DYNAMODB"
	KMSEndpoint        = "AWS_ENDPOINT_URL_KMS"
	// EventBridgeEndpoint is the SDK's own name for EventBridge's
	// (its service id, EventBridge).
	EventBridgeEndpoint = "AWS_ENDPOINT_URL_EVENTBRIDGE"
)

// Defaults of the settings that have one.
const (
	DefaultData       = ".sshdeck"
	DefaultAddr       = "127.0.0.1:8080"
	DefaultTunnelAddr = "127.0.0.1:8081"
)

// maxLimit bounds every limit: past it, a limit protects nothing.
const maxLimit = 1_000_000

// DefaultLoginTTL is the life of a login token: a working day and a half,
// so that a session started in the morning does not end before the evening.
const DefaultLoginTTL = 12 * time.Hour

// The bounds of a login token's life: past 30 days a session token is a
// long-lived credential, which POST /tokens makes on purpose.
const (
	minLoginTTL = time.Minute
	maxLoginTTL = 30 * 24 * time.Hour
)

// TunnelIdleTimeout is the idle timeout of the load balancer in front of
// the tunnel service in AWS (infra): the longest a long-lived request may
// carry no byte before the load balancer closes it. Each sends one well
// inside it: a status stream a ping comment every 15 s, a forward's
// WebSocket a keepalive every 20 s (forwarding.KeepAlive, whose test holds
// it to half of this).
const TunnelIdleTimeout = 60 * time.Second

// DefaultAuditDays is how long audit records are kept (API.md: 400 days),
// and maxAuditDays the most a deployment may set: past it, the stores'
// queries of every record would read years of empty months.
const (
	DefaultAuditDays = 400
	maxAuditDays     = 5 * 365
)

// AuditRetention is how long an audit record is kept.
func (c Config) AuditRetention() time.Duration { return time.Duration(c.AuditDays) * 24 * time.Hour }

// minLeaseTTL keeps heartbeats (a third of the TTL) from spinning.
const minLeaseTTL = 300 * time.Millisecond

// Config is every setting, typed. The zero value of an optional setting
// means unset: its user applies its own default (GitHub's API URL, the
// default denied ranges, a lease TTL of 30 s, a replica name of its own).
type Config struct {
	Data, Addr, TunnelAddr string
	Table, KMSKeyID        string

	ReleasesRepo, ReleasesAPIURL, GitHubToken string
	AlertsURL                                 string

	Limits Limits

	// TunnelDeny is nil when SSHDECK_TUNNEL_DENY_CIDRS is unset.
	TunnelDeny     []netip.Prefix
	TunnelLeaseTTL time.Duration
	ReplicaID      string

	// LoginTTL is DefaultLoginTTL unless SSHDECK_LOGIN_TTL says otherwise.
	LoginTTL time.Duration

	// AuditDays is DefaultAuditDays unless SSHDECK_AUDIT_DAYS says
	// otherwise.
	AuditDays                 int
	WebhookURL, WebhookSecret string
	EventBus                  string
	TrustForwardedFor         bool

	AWS AWS
}

// Limits are the most of each thing one user may have (per host for
// shortcuts and recent files, per chain for jump hosts). Going past one is
// sshdeck.LimitExceeded (a status stream's, RateLimited).
type Limits struct {
	Hosts, Tunnels, Streams, Tokens int // per user
	Shortcuts, Recent               int // per host; the oldest recent entry is dropped
	JumpHosts                       int // per chain
	Forwards                        int // concurrent forwarded connections per user
}

// DefaultLimits are the limits of a deployment that sets none.
var DefaultLimits = Limits{
	Hosts: 1000, Tunnels: 64, Streams: 4, Tokens: 100,
	Shortcuts: 500, Recent: 100, JumpHosts: 8, Forwards: 256,
}

// AWS is what the environment says of AWS. Lambda sets the region and the
// function role's credentials; elsewhere the SDK's own chain finds them.
type AWS struct {
	Region, AccessKeyID, SecretAccessKey, SessionToken string
	// DynamoDBEndpoint, KMSEndpoint and EventBridgeEndpoint replace the
	// services' endpoints.
	DynamoDBEndpoint, KMSEndpoint, EventBridgeEndpoint string
}

// FromEnv loads the settings from the process environment.
func FromEnv() (Config, error) { return Load(os.Getenv) }

// Load reads every setting through getenv, applies the defaults and checks
// the values; the error names the first malformed setting.
func Load(getenv func(string) string) (Config, error) {
	or := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	c := Config{
		Data:           or(Data, DefaultData),
		Addr:           or(Addr, DefaultAddr),
		TunnelAddr:     or(TunnelAddr, DefaultTunnelAddr),
		Table:          getenv(Table),
		KMSKeyID:       getenv(KMSKeyID),
		ReleasesRepo:   getenv(ReleasesRepo),
		ReleasesAPIURL: getenv(ReleasesAPIURL),
		GitHubToken:    getenv(GitHubToken),
		AlertsURL:      getenv(AlertsURL),
		ReplicaID:      getenv(ReplicaID),
		WebhookURL:     getenv(WebhookURL),
		WebhookSecret:  getenv(WebhookSecret),
		EventBus:       getenv(EventBus),
		AWS: AWS{
			Region:              getenv(AWSRegion),
			AccessKeyID:         getenv(AWSAccessKeyID),
			SecretAccessKey:     getenv(AWSSecretAccessKey),
			SessionToken:        getenv(AWSSessionToken),
			DynamoDBEndpoint:    getenv(DynamoDBEndpoint),
			KMSEndpoint:         getenv(KMSEndpoint),
			EventBridgeEndpoint: getenv(EventBridgeEndpoint),
		},
	}
	c.Limits = DefaultLimits
	c.LoginTTL = DefaultLoginTTL
	if v := getenv(LoginTTL); v != "" {
		ttl, err := time.ParseDuration(v)
		if err != nil || ttl < minLoginTTL || ttl > maxLoginTTL {
			return c, fmt.Errorf("%s: %q is not a duration from %s to %s, such as 12h", LoginTTL, v, minLoginTTL, maxLoginTTL)
		}
		c.LoginTTL = ttl
	}
	for _, l := range []struct {
		name string
		v    *int
	}{
		{LimitHosts, &c.Limits.Hosts}, {LimitTunnels, &c.Limits.Tunnels}, {LimitStreams, &c.Limits.Streams},
		{LimitTokens, &c.Limits.Tokens}, {LimitShortcuts, &c.Limits.Shortcuts}, {LimitRecent, &c.Limits.Recent},
		{LimitJumpHosts, &c.Limits.JumpHosts}, {LimitForwards, &c.Limits.Forwards},
	} {
		if v := getenv(l.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxLimit {
				return c, fmt.Errorf("%s: %q is not a whole number from 1 to %d", l.name, v, maxLimit)
			}
			*l.v = n
		}
	}
	switch v := getenv(TrustForwardedFor); v {
	case "", "false":
	case "true":
		c.TrustForwardedFor = true
	default:
		return c, fmt.Errorf("%s: %q is neither true nor false", TrustForwardedFor, v)
	}
	c.AuditDays = DefaultAuditDays
	if v := getenv(AuditDays); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxAuditDays {
			return c, fmt.Errorf("%s: %q is not a whole number of days from 1 to %d", AuditDays, v, maxAuditDays)
		}
		c.AuditDays = n
	}
	if c.WebhookURL != "" {
		if u, err := url.Parse(c.WebhookURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, fmt.Errorf("%s: %q is not an http or https URL", WebhookURL, c.WebhookURL)
		}
		if c.WebhookSecret == "" {
			return c, Missing(WebhookSecret, "the webhook's events are signed with it (HMAC-SHA256); choose a long random string and give it to the receiver too")
		}
	}
	if list := getenv(TunnelDenyCIDRs); list != "" {
		deny, err := ParseCIDRs(list)
		if err != nil {
			return c, fmt.Errorf("%s: %w", TunnelDenyCIDRs, err)
		}
		c.TunnelDeny = deny
	}
	if v := getenv(TunnelLeaseTTL); v != "" {
		ttl, err := time.ParseDuration(v)
		if err != nil || ttl < minLeaseTTL {
			return c, fmt.Errorf("%s: %q is not a duration of at least %s, such as 30s", TunnelLeaseTTL, v, minLeaseTTL)
		}
		c.TunnelLeaseTTL = ttl
	}
	return c, nil
}

// ParseCIDRs parses a comma-separated list of CIDR ranges; blanks around
// items are ignored.
func ParseCIDRs(list string) ([]netip.Prefix, error) {
	out := []netip.Prefix{}
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		p, err := netip.ParsePrefix(item)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR range such as 10.0.0.0/8", item)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Missing is the error of a setting a binary needs and did not get; why
// says where it comes from or what to name.
func Missing(name, why string) error {
	return fmt.Errorf("%s is not set: %s", name, why)
}
