// Package cloudtest is what a deployed Lambda function of sshdeck sees,
// run on loopback: DynamoDB (dynamotest, minidyn), KMS (kmstest),
// EventBridge (eventstest), GitHub's releases API and a remote alerts list
// (upstreamtest), and the environment
// that names them to a function exactly as the CDK stack does; and the
// fixture the sample events in events/ were written for (events/README.md).
// The replay tests of functions/ use it in process, the Lambda benchmark
// (bench/lambdabench) hands its environment to real bootstraps.
package cloudtest

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sshdeck/sshdeck/internal/dynamotest"
	"github.com/sshdeck/sshdeck/internal/eventstest"
	"github.com/sshdeck/sshdeck/internal/kmstest"
	"github.com/sshdeck/sshdeck/internal/upstreamtest"
	"github.com/sshdeck/sshdeck/shared/accounts"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/files"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
)

// Cloud is DynamoDB, KMS, EventBridge and the upstream services on
// loopback, and the store and sealer over them.
type Cloud struct {
	Dynamo *dynamotest.Server
	KMS    *kmstest.Server
	// Events is EventBridge, where audit-events puts the audit records on
	// the bus EventBus.
	Events *eventstest.Server
	GitHub *upstreamtest.GitHub
	Alerts *upstreamtest.Alerts
	// Store is the DynamoDB store over Dynamo's table, Sealer seals with
	// KMS's key: what a function builds from Env.
	Store  sshdeck.Store
	Sealer *secret.Sealer
}

// RemoteAlert is the one alert of the remote alerts list.
const RemoteAlert = `[{"id":"remote-1","title":"New client release","message":"Version 3 is out.","expiresAt":"2099-06-01T00:00:00Z","priority":"low","type":"success","actionUrl":"https://example.com/v3","actionText":"Download"}]`

// EventBus is the bus of Env's SSHDECK_EVENT_BUS: the CDK stack's is named
// after the stack, Sshdeck by default.
const EventBus = "Sshdeck"

// New starts the services, with an empty table, until Close.
func New(ctx context.Context) (*Cloud, error) {
	d, err := dynamotest.New(ctx)
	if err != nil {
		return nil, err
	}
	c := &Cloud{Dynamo: d, KMS: kmstest.New(), Events: eventstest.New(), GitHub: upstreamtest.NewGitHub(), Alerts: upstreamtest.NewAlerts()}
	c.Alerts.Set(200, RemoteAlert)
	c.Store = dynamo.New(c.Dynamo.Client, c.Dynamo.Table)
	c.Sealer = secret.NewSealer(secret.NewKMSKeyring(c.KMS.Client(), c.KMS.KeyID))
	return c, nil
}

// Start is New until the test ends.
func Start(t testing.TB) *Cloud {
	t.Helper()
	c, err := New(t.Context())
	if err != nil {
		t.Fatalf("cloudtest: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// Close stops the services.
func (c *Cloud) Close() {
	c.Alerts.Close()
	c.GitHub.Close()
	c.Events.Close()
	c.KMS.Close()
	c.Dynamo.Close()
}

// Env is the environment that names the services to a function, as the CDK
// stack names the real ones (NAME=value): the table, region and credentials
// of dynamotest.Server.Env, the KMS key and endpoint, the event bus and
// EventBridge's endpoint, the releases repository and API, and the remote
// alerts list. (The stack tells each function only the settings it reads;
// the others ignore the rest.)
func (c *Cloud) Env() []string {
	return append(c.Dynamo.Env(),
		"SSHDECK_KMS_KEY_ID="+c.KMS.KeyID,
		"AWS_ENDPOINT_URL_KMS="+c.KMS.URL,
		"SSHDECK_EVENT_BUS="+EventBus,
		"AWS_ENDPOINT_URL_EVENTBRIDGE="+c.Events.URL,
		"SSHDECK_RELEASES_REPO=acme/deck",
		"SSHDECK_RELEASES_API_URL="+c.GitHub.URL,
		"SSHDECK_ALERTS_URL="+c.Alerts.URL,
	)
}

// Reset forgets the calls that DynamoDB and KMS have counted, and the
// events EventBridge took.
func (c *Cloud) Reset() {
	c.Dynamo.ResetCalls()
	c.KMS.ResetCalls()
	c.Events.Reset()
}

// The fixture the sample events were written for (events/README.md): the
// user the authorizer context names (alice, with the password of
// events/login.json and a TOTP secret waiting for enable-totp's code), the
// token of events/authorizer/valid.json and a read-only one (CIToken), two
// hosts with file-manager entries, two alerts, and the admin root (with
// the token, RootPassword and TOTP on) of the admin routes' events.
var seedHosts = []string{
	`{"name":"web-1","ip":"10.0.2.20","username":"ubuntu","authType":"password","password":"hunter2","tags":["prod","web"]}`,
	`{"name":"cache","ip":"10.0.3.7","port":6022,"username":"ops","authType":"none","folder":"staging"}`,
}

var seedFiles = []struct {
	host   int64
	path   string
	recent bool
}{
	{1, "/etc/hosts", true}, {1, "/var/log/syslog", true}, {2, "/srv/cache/redis.conf", true},
	{1, "/etc", false}, {1, "/home/ubuntu", false}, {2, "/srv/cache", false},
}

// RootPassword is the password of the fixture's admin root (alice's is in
// events/login.json).
const RootPassword = "root's passphrase, for the events only"

// CIToken is the bearer string of alice's second token in the fixture,
// tok_ci: named "ci", with the scope hosts:read alone, never used; the
// events revoke it (delete-token), or a password change or disabling alice
// does.
const CIToken = "sshdeck_Q0kgdG9rZW46IHJlYWRzIGhvc3RzLCBub3RoaW5nICs"

// Fixture is what Seed wrote that the events cannot say: the TOTP secrets,
// random, whose codes change every 30 s.
type Fixture struct {
	// PendingTOTP is alice's secret waiting for its first code
	// (enable-totp's); ActiveTOTP is root's, on (disable-totp's).
	PendingTOTP, ActiveTOTP []byte
}

// Event reads the proxy event dir/<name>.json as it must be sent now to
// the fixture: the code in the body of enable-totp and disable-totp is the
// current one of the secret it proves (a code written in a file would be
// stale within 30 s).
func (f *Fixture) Event(dir, name string, now time.Time) (events.APIGatewayProxyRequest, error) {
	ev, err := ReadEvent(dir, name)
	if err != nil {
		return ev, err
	}
	var key []byte
	switch name {
	case "enable-totp":
		key = f.PendingTOTP
	case "disable-totp":
		key = f.ActiveTOTP
	default:
		return ev, nil
	}
	body := map[string]any{}
	if err := json.Unmarshal([]byte(ev.Body), &body); err != nil {
		return ev, fmt.Errorf("%s/%s.json: body: %w", dir, name, err)
	}
	body["code"] = TOTPCode(key, now)
	b, err := json.Marshal(body)
	ev.Body = string(b)
	return ev, err
}

// TOTPCode is the RFC 6238 code of secret at t (HMAC-SHA1, 30 s steps, 6
// digits), as an authenticator app shows it. It is written here apart from
// shared/auth's, which checks it.
func TOTPCode(secret []byte, t time.Time) string {
	mac := hmac.New(sha1.New, secret)
	binary.Write(mac, binary.BigEndian, uint64(t.Unix()/30))
	sum := mac.Sum(nil)
	offset := sum[len(sum)-1] & 0x0f
	v := binary.BigEndian.Uint32(sum[offset:]) & 0x7fffffff
	return fmt.Sprintf("%06d", v%1_000_000)
}

// Seed writes the fixture of the events in dir (the repository's events/)
// into a store, sealing with sealer.
func Seed(ctx context.Context, store sshdeck.Store, sealer *secret.Sealer, dir string) error {
	_, err := SeedFixture(ctx, store, sealer, dir)
	return err
}

// SeedFixture is Seed, returning what the events cannot say of the fixture.
func SeedFixture(ctx context.Context, store sshdeck.Store, sealer *secret.Sealer, dir string) (*Fixture, error) {
	f, err := seed(ctx, store, sealer, dir)
	if err != nil {
		return nil, fmt.Errorf("the fixture of %s: %w", dir, err)
	}
	return f, nil
}

func seed(ctx context.Context, store sshdeck.Store, sealer *secret.Sealer, dir string) (*Fixture, error) {
	ev, err := ReadEvent(dir, "get-host")
	if err != nil {
		return nil, err
	}
	userID, _ := ev.RequestContext.Authorizer[auth.ContextUserID].(string)
	valid, err := EventToken(dir, "valid")
	if err != nil {
		return nil, err
	}
	admin, err := ReadEvent(dir, "publish-alert")
	if err != nil {
		return nil, err
	}
	adminID, _ := admin.RequestContext.Authorizer[auth.ContextUserID].(string)
	adminToken, _ := auth.BearerToken(admin.Headers["Authorization"])
	if userID == "" || adminID == "" || adminToken == "" {
		return nil, fmt.Errorf("%s: get-host.json and publish-alert.json must name their callers (authorizer context, Authorization)", dir)
	}
	login, err := ReadEvent(dir, "login")
	if err != nil {
		return nil, err
	}
	var credentials accounts.LoginRequest
	if err := json.Unmarshal([]byte(login.Body), &credentials); err != nil || credentials.Username != "alice" || credentials.Password == "" {
		return nil, fmt.Errorf("%s: login.json must log alice in with a password (%v)", dir, err)
	}

	// The events' tokens were last used now: an authenticator (the local
	// server's) leaves them as they are for a minute, so that a list of
	// tokens reads the same through a function and through the server.
	now := time.Now().UTC().Truncate(time.Millisecond)
	steps := []func() error{
		func() error { return store.CreateUser(ctx, &sshdeck.User{ID: userID, Name: "alice", CreatedAt: now}) },
		func() error {
			return store.CreateToken(ctx, &sshdeck.Token{ID: "tok_valid", UserID: userID, Name: "events",
				Hash: auth.HashToken(valid), CreatedAt: now, LastUsedAt: now})
		},
		func() error {
			return store.CreateToken(ctx, &sshdeck.Token{ID: "tok_ci", UserID: userID, Name: "ci",
				Hash: auth.HashToken(CIToken), CreatedAt: now, Scopes: []sshdeck.Scope{sshdeck.ScopeHostsRead}})
		},
		// The admin of the admin routes' events.
		func() error {
			return store.CreateUser(ctx, &sshdeck.User{ID: adminID, Name: "root", Admin: true, CreatedAt: now})
		},
		func() error {
			return store.CreateToken(ctx, &sshdeck.Token{ID: "tok_admin", UserID: adminID, Name: "events",
				Hash: auth.HashToken(adminToken), CreatedAt: now, LastUsedAt: now})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}

	// Passwords, and TOTP: alice's waiting for enable-totp's code, root's
	// on (turned on with the code of the step before now's, so that the
	// code of now's, disable-totp's, is a later one).
	f := &Fixture{}
	users := accounts.NewService(store, auth.NewAdmin(store, nil, nil), sealer, nil)
	if _, err := users.SetPassword(ctx, "alice", credentials.Password); err != nil {
		return nil, err
	}
	if _, err := users.SetPassword(ctx, "root", RootPassword); err != nil {
		return nil, err
	}
	if f.PendingTOTP, err = beginTOTP(ctx, users, userID); err != nil {
		return nil, err
	}
	if f.ActiveTOTP, err = beginTOTP(ctx, users, adminID); err != nil {
		return nil, err
	}
	code := TOTPCode(f.ActiveTOTP, time.Now().Add(-30*time.Second))
	if err := users.EnableTOTP(ctx, sshdeck.Principal{UserID: adminID}, code); err != nil {
		return nil, err
	}

	svc := hosts.NewService(store, store, sealer, nil)
	for _, body := range seedHosts {
		var in hosts.Input
		if err := json.Unmarshal([]byte(body), &in); err != nil {
			return nil, err
		}
		if _, err := svc.Create(ctx, userID, &in); err != nil {
			return nil, err
		}
	}
	entries := files.NewService(store, nil)
	for _, e := range seedFiles {
		in := &files.Input{Path: e.path, HostID: &e.host}
		if e.recent {
			err = entries.AddRecent(ctx, userID, in)
		} else {
			_, err = entries.AddShortcut(ctx, userID, in)
		}
		if err != nil {
			return nil, err
		}
	}
	for i, title := range []string{"Scheduled maintenance", "Welcome"} {
		if err := store.CreateAlert(ctx, &sshdeck.Alert{
			ID: fmt.Sprintf("alr_5eed%012d", i+1), Title: title, Message: "About " + title,
			ExpiresAt: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), Priority: sshdeck.PriorityHigh, Type: sshdeck.AlertInfo,
			CreatedAt: now,
		}); err != nil {
			return nil, err
		}
	}
	// Audit records of alice's and root's, for list-audit and export-audit.
	for i, r := range []struct{ actor, action, target string }{
		{userID, "create-host", "host 1"}, {adminID, "publish-alert", "alert alr_5eed000000000001"}, {userID, "create-host", "host 2"},
	} {
		at := time.Date(2026, 11, 20, 9, i, 0, 0, time.UTC)
		if err := store.PutAuditRecord(ctx, &sshdeck.AuditRecord{
			ID: fmt.Sprintf("aud_5eed%028d", i+1), Time: at, Actor: r.actor, Action: r.action, Target: r.target,
			RequestID: fmt.Sprintf("req-5eed-%d", i+1), SourceIP: "203.0.113.24", Outcome: sshdeck.AuditSuccess,
			ExpiresAt: at.Add(400 * 24 * time.Hour),
		}); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// beginTOTP starts TOTP for the user as POST /users/me/totp does and
// returns the new secret.
func beginTOTP(ctx context.Context, users *accounts.Service, userID string) ([]byte, error) {
	s, err := users.BeginTOTP(ctx, sshdeck.Principal{UserID: userID})
	if err != nil {
		return nil, err
	}
	return base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(s.Secret)
}

// Seed writes the fixture of the events in dir into the cloud's store.
func (c *Cloud) Seed(ctx context.Context, dir string) error {
	return Seed(ctx, c.Store, c.Sealer, dir)
}

// SeedFixture is Seed, returning what the events cannot say of the fixture.
func (c *Cloud) SeedFixture(ctx context.Context, dir string) (*Fixture, error) {
	return SeedFixture(ctx, c.Store, c.Sealer, dir)
}

// ReadEvent reads the proxy event dir/<name>.json.
func ReadEvent(dir, name string) (events.APIGatewayProxyRequest, error) {
	var ev events.APIGatewayProxyRequest
	err := readJSON(filepath.Join(dir, name+".json"), &ev)
	return ev, err
}

// ReadAuthorizerEvent reads the authorizer event dir/authorizer/<name>.json.
func ReadAuthorizerEvent(dir, name string) (events.APIGatewayCustomAuthorizerRequestTypeRequest, error) {
	var ev events.APIGatewayCustomAuthorizerRequestTypeRequest
	err := readJSON(filepath.Join(dir, "authorizer", name+".json"), &ev)
	return ev, err
}

// ReadStreamEvent reads the DynamoDB Streams event dir/<name>.json
// (audit-events.json).
func ReadStreamEvent(dir, name string) (events.DynamoDBEvent, error) {
	var ev events.DynamoDBEvent
	err := readJSON(filepath.Join(dir, name+".json"), &ev)
	return ev, err
}

// EventToken returns the bearer token of the authorizer event
// dir/authorizer/<name>.json.
func EventToken(dir, name string) (string, error) {
	ev, err := ReadAuthorizerEvent(dir, name)
	if err != nil {
		return "", err
	}
	token, ok := auth.BearerToken(ev.Headers["Authorization"])
	if !ok || !auth.WellFormed(token) {
		return "", fmt.Errorf("%s/authorizer/%s.json has no well-formed bearer token", dir, name)
	}
	return token, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
