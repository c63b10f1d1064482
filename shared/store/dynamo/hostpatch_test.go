package dynamo_test

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
)

// TestPatchHostRequest checks PatchHost's one UpdateItem: the attributes it
// SETs, the version it adds to, the REMOVE of what the patch empties (as a
// put would leave it out), and its conditions. minidyn ignores a REMOVE of
// a top-level attribute, so the request is what is checked; each request
// must also succeed there.
func TestPatchHostRequest(t *testing.T) {
	ctx := t.Context()
	_, srv := start(t)
	api := &updates{API: srv.Client}
	s := dynamo.New(api, srv.Table)
	h := newHost("alice", 1, 1)
	h.KeyType = "auto"
	if err := s.CreateHost(ctx, h); err != nil {
		t.Fatal(err)
	}
	patch := func(p *sshdeck.HostPatch) *dynamodb.UpdateItemInput {
		t.Helper()
		if p.KeyType == "" {
			p.KeyType = "auto"
		}
		api.sent = nil
		if _, err := s.PatchHost(ctx, p); err != nil {
			t.Fatal(err)
		}
		if len(api.sent) != 1 {
			t.Fatalf("PatchHost sent %d UpdateItems, want 1", len(api.sent))
		}
		in := api.sent[0]
		if in.ReturnValues != types.ReturnValueAllNew || in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
			t.Errorf("ReturnValues %s, on failure %s", in.ReturnValues, in.ReturnValuesOnConditionCheckFailure)
		}
		return in
	}
	config := []string{"authType", "defaultPath", "enableFileManager", "enableTerminal", "enableTunnel", "folder", "ip", "keyType", "name", "pin", "port", "username"}

	// Credentials kept, lists given: everything SET, nothing removed.
	p := newPatch("alice", 1)
	p.Tags = []string{"a"}
	p.TunnelConnections = []sshdeck.TunnelConnection{{SourcePort: 1, EndpointPort: 2, EndpointHost: "h"}}
	in := patch(p)
	expr := *in.UpdateExpression
	if !strings.HasPrefix(expr, "SET #version = #version + :one, ") || strings.Contains(expr, "REMOVE") || strings.Contains(expr, "#sealed") {
		t.Errorf("update keeping the credentials: %s", expr)
	}
	want := slices.Sorted(slices.Values(append(config, "pk", "tags", "tunnelConnections", "updatedAt", "version")))
	if got := slices.Sorted(maps.Values(in.ExpressionAttributeNames)); !slices.Equal(got, want) {
		t.Errorf("attributes named: %v, want %v", got, want)
	}
	if cond := *in.ConditionExpression; cond != "attribute_exists(#pk)" {
		t.Errorf("condition without the patch's: %s", cond)
	}

	// Lists and credentials emptied (nil or empty): REMOVEd.
	p = newPatch("alice", 1)
	p.Sealed = &sshdeck.SealedCredentials{}
	in = patch(p)
	p = newPatch("alice", 1)
	p.Tags, p.TunnelConnections = []string{}, []sshdeck.TunnelConnection{}
	p.Sealed = &sshdeck.SealedCredentials{Password: []byte{}}
	if again := patch(p); *again.UpdateExpression != *in.UpdateExpression {
		t.Errorf("update emptying with empty values: %s; with nil ones: %s", *again.UpdateExpression, *in.UpdateExpression)
	}
	if expr := *in.UpdateExpression; !strings.HasSuffix(expr, " REMOVE #tags, #tunnelConnections, #sealed") {
		t.Errorf("update emptying the lists and credentials: %s, want it to REMOVE them", expr)
	}
	for _, name := range []string{"tags", "tunnelConnections", "sealed"} {
		if in.ExpressionAttributeNames["#"+name] != name {
			t.Errorf("#%s names %q", name, in.ExpressionAttributeNames["#"+name])
		}
		if _, ok := in.ExpressionAttributeValues[":"+name]; ok {
			t.Errorf("update emptying %s gives it a value", name)
		}
	}

	// Credentials replaced: sealed SET, with the given ones only.
	p = newPatch("alice", 1)
	p.Tags = []string{"a"}
	p.TunnelConnections = []sshdeck.TunnelConnection{{SourcePort: 1, EndpointPort: 2, EndpointHost: "h"}}
	p.Sealed = &sshdeck.SealedCredentials{Password: []byte{1}}
	in = patch(p)
	if expr := *in.UpdateExpression; !strings.Contains(expr, ", #sealed = :sealed") || strings.Contains(expr, "REMOVE") {
		t.Errorf("update replacing the credentials: %s", expr)
	}
	sealed, _ := in.ExpressionAttributeValues[":sealed"].(*types.AttributeValueMemberM)
	if sealed == nil || len(sealed.Value) != 1 || attr(sealed.Value, "password") != "B:01" {
		t.Errorf("sealed SET to %#v, want the password alone", in.ExpressionAttributeValues[":sealed"])
	}

	// Every condition, met.
	p = newPatch("alice", 1)
	p.Tags = []string{"a"}
	p.TunnelConnections = []sshdeck.TunnelConnection{{SourcePort: 1, EndpointPort: 2, EndpointHost: "h"}}
	p.IfVersion, p.IfKeyType = 5, "auto"
	p.KeyType = "ssh-rsa"
	p.IfNoKey, p.IfNoKeyPassword = true, true
	in = patch(p)
	if cond := *in.ConditionExpression; cond != "attribute_exists(#pk) AND #version = :ifVersion AND #keyType = :ifKeyType AND "+
		"attribute_not_exists(#sealed.#key) AND attribute_not_exists(#sealed.#keyPassword)" {
		t.Errorf("condition: %s", cond)
	}
	for placeholder, want := range map[string]string{":ifVersion": "N:5", ":ifKeyType": "S:auto", ":keyType": "S:ssh-rsa"} {
		if got := attr(in.ExpressionAttributeValues, placeholder); got != want {
			t.Errorf("%s: %s, want %s", placeholder, got, want)
		}
	}
	for placeholder, want := range map[string]string{"#keyType": "keyType", "#sealed": "sealed", "#key": "key", "#keyPassword": "keyPassword", "#version": "version"} {
		if got := in.ExpressionAttributeNames[placeholder]; got != want {
			t.Errorf("%s names %q, want %q", placeholder, got, want)
		}
	}
	if _, ok := in.ExpressionAttributeNames["#password"]; ok {
		t.Errorf("a condition without IfNoPassword names the password")
	}
}

// TestPatchHostItem checks a patched host item: the configuration and
// updatedAt as the patch says, the version one up, the rest as stored.
func TestPatchHostItem(t *testing.T) {
	s, srv := start(t)
	h := newHost("alice", 1, 1)
	h.CreatedAt = time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.FixedZone("UTC+2", 2*3600))
	h.Sealed.Key = []byte{0xff, 0x00}
	if err := s.CreateHost(t.Context(), h); err != nil {
		t.Fatal(err)
	}
	p := newPatch("alice", 1)
	p.UpdatedAt = time.Date(2025, 3, 14, 17, 0, 0, 1_000_000, time.FixedZone("UTC+2", 2*3600))
	p.Port, p.Tags = 2222, []string{"prod"}
	got, err := s.PatchHost(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 || got.Name != "patched" || got.Owner != "alice" || got.ID != 1 || !got.CreatedAt.Equal(h.CreatedAt) || string(got.Sealed.Key) != "\xff\x00" {
		t.Errorf("PatchHost returned %+v", got)
	}
	item := rawItem(t, srv, "OWNER#alice", "HOST#0000000000000000001")
	for name, want := range map[string]string{
		"id": "N:1", "version": "N:2", "owner": "S:alice", "name": "S:patched", "port": "N:2222",
		"createdAt": "S:2025-03-14T13:09:26.535Z", "updatedAt": "S:2025-03-14T15:00:00.001Z",
	} {
		if got := attr(item, name); got != want {
			t.Errorf("patched host item's %s: got %s, want %s", name, got, want)
		}
	}
	sealed, ok := item["sealed"].(*types.AttributeValueMemberM)
	if !ok {
		t.Fatalf("patched host item's sealed: got %T, want a map", item["sealed"])
	}
	for name, want := range map[string]string{"password": "B:000102", "key": "B:ff00", "keyPassword": "-"} {
		if got := attr(sealed.Value, name); got != want {
			t.Errorf("patched host item's sealed.%s: got %s, want %s", name, got, want)
		}
	}
}

// TestUpdateHostRouteCalls counts the calls of update-host's paths through
// the service (the sample event takes the first, which
// functions/replay_test.go pins too; TestRouteCalls pins If-Match's), and
// checks them against the route's IAM actions.
func TestUpdateHostRouteCalls(t *testing.T) {
	ctx := t.Context()
	s, srv := start(t)
	keyring, err := secret.NewLocalKeyring(make([]byte, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	svc := hosts.NewService(s, secret.NewSealer(keyring), nil)
	if err := s.CreateUser(ctx, &sshdeck.User{ID: "u-1", Name: "alice", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	body := func(authType string, password *string) *hosts.Input {
		in := &hosts.Input{IP: "10.0.0.5", Username: "deploy", Password: password}
		if authType != "" {
			in.AuthType = &authType
		}
		return in
	}
	str := func(s string) *string { return &s }
	rec, err := svc.Create(ctx, "u-1", body("password", str("hunter2")))
	if err != nil {
		t.Fatal(err)
	}

	version := rec.Version // the host's, after each step
	steps := []struct {
		path string
		run  func() (*hosts.Record, error)
		code sshdeck.Code
		want map[string]int
	}{
		{"a new password", func() (*hosts.Record, error) {
			return svc.Update(ctx, "u-1", rec.ID, body("password", str("new")), nil)
		}, "", map[string]int{"UpdateItem": 1}},
		{"the password kept", func() (*hosts.Record, error) {
			return svc.Update(ctx, "u-1", rec.ID, body("password", nil), nil)
		}, "", map[string]int{"UpdateItem": 1}},
		{"an absent host", func() (*hosts.Record, error) {
			return svc.Update(ctx, "u-1", rec.ID+1, body("password", str("new")), nil)
		}, sshdeck.NotFound, map[string]int{"UpdateItem": 1}},
		// authType key without a key: the patch is conditioned on no
		// stored password, which there is.
		{"a refused patch", func() (*hosts.Record, error) {
			return svc.Update(ctx, "u-1", rec.ID, body("key", nil), nil)
		}, "", map[string]int{"UpdateItem": 1, "GetItem": 1, "PutItem": 1}},
		{"a keyPassword alone", func() (*hosts.Record, error) {
			in := body("key", nil)
			in.KeyPassword = str("x")
			return svc.Update(ctx, "u-1", rec.ID, in, nil)
		}, "", map[string]int{"GetItem": 1, "PutItem": 1}},
		{"no authType", func() (*hosts.Record, error) {
			return svc.Update(ctx, "u-1", rec.ID, body("", str("pw")), nil)
		}, "", map[string]int{"GetItem": 1, "PutItem": 1}},
		{"If-Match *", func() (*hosts.Record, error) {
			return svc.Update(ctx, "u-1", rec.ID, body("password", str("new")), &hosts.Precondition{Any: true})
		}, "", map[string]int{"UpdateItem": 1}},
		{"If-Match of the version", func() (*hosts.Record, error) {
			return svc.Update(ctx, "u-1", rec.ID, body("password", str("new")), &hosts.Precondition{Versions: []int64{version}})
		}, "", map[string]int{"UpdateItem": 1}},
		// The refused patch is told from an absent host by the read.
		{"a stale If-Match", func() (*hosts.Record, error) {
			return svc.Update(ctx, "u-1", rec.ID, body("password", str("new")), &hosts.Precondition{Versions: []int64{1}})
		}, sshdeck.PreconditionFailed, map[string]int{"UpdateItem": 1, "GetItem": 1}},
	}
	for _, step := range steps {
		srv.ResetCalls()
		r, err := step.run()
		if got := sshdeck.ErrorCode(err); got != step.code {
			t.Fatalf("%s: got error %v, want code %q", step.path, err, step.code)
		}
		if got := srv.Calls(); !maps.Equal(got, step.want) {
			t.Errorf("%s: got calls %v, want %v", step.path, got, step.want)
		}
		srv.CheckGranted(t, "update-host, "+step.path, granted(t, "update-host"))
		if err == nil {
			if version++; r.Version != version {
				t.Errorf("%s: version %d, want %d", step.path, r.Version, version)
			}
		}
	}
}
