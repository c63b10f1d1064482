package functions

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/lambdaapp"
	"github.com/sshdeck/sshdeck/shared/lambdahttp"
	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// entryPoint builds the entry point of route r as its main does
// (lambdaapp.Route, or lambdaapp.StreamRoute for a route marked Stream),
// answering as a buffered proxy response: a streamed answer is read as API
// Gateway reads it (prelude, delimiter, body) and gathered.
func entryPoint(r routes.Route) (func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error), error) {
	if !r.Stream {
		fn, err := lambdaapp.Route(r.Name)
		if err != nil {
			return nil, err
		}
		return fn.Handle, nil
	}
	fn, err := lambdaapp.StreamRoute(r.Name)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		resp, err := fn.Handle(ctx, ev)
		if err != nil {
			return events.APIGatewayProxyResponse{}, err
		}
		defer resp.Close()
		status, header, body, err := lambdahttp.ReadStream(resp)
		if err != nil {
			return events.APIGatewayProxyResponse{}, err
		}
		b, err := io.ReadAll(body)
		if err != nil {
			return events.APIGatewayProxyResponse{}, err
		}
		return events.APIGatewayProxyResponse{StatusCode: status, MultiValueHeaders: header, Body: string(b)}, nil
	}, nil
}

// TestStreamFlagPicksTheEntryPoint: each entry point refuses the routes of
// the other, so that a function cannot be wired against the table.
func TestStreamFlagPicksTheEntryPoint(t *testing.T) {
	startCloud(t)
	for _, r := range routes.All {
		var err error
		if r.Stream {
			_, err = lambdaapp.Route(r.Name)
		} else {
			_, err = lambdaapp.StreamRoute(r.Name)
		}
		if err == nil {
			t.Errorf("route %s (Stream %t) got the other entry point", r.Name, r.Stream)
		}
	}
}

// quotaHosts and quotaKey are API.md's quota: 1000 hosts per user, each
// with a key of 64 KiB (the most a key may be).
const (
	quotaHosts = 1000
	quotaKey   = 64 << 10
)

// bigKey is a key of exactly n bytes shaped like an OpenSSH private key
// (base64 lines), different per host.
func bigKey(id int64, n int) string {
	head, tail := "-----BEGIN OPENSSH PRIVATE KEY-----\n", "-----END OPENSSH PRIVATE KEY-----\n"
	raw := bytes.Repeat([]byte(strconv.FormatInt(id, 10)+"sshdeck"), n)
	b64 := base64.StdEncoding.EncodeToString(raw)
	var b strings.Builder
	b.WriteString(head)
	for b.Len() < n-len(tail) {
		line := b64[:min(70, n-len(tail)-b.Len()-1)]
		b64 = b64[len(line):]
		b.WriteString(line)
		b.WriteByte('\n')
	}
	b.WriteString(tail)
	return b.String()[:n]
}

// seedHosts writes n hosts with quotaKey keys for owner directly in the
// store (sealed as the host service seals them), a few at a time.
func seedHosts(t testing.TB, store sshdeck.Store, sealer *secret.Sealer, owner string, n int) {
	t.Helper()
	ctx := context.Background()
	ids := make(chan int64)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for id := range ids {
				h := &sshdeck.Host{Owner: owner, ID: id, Version: 1, HostConfig: sshdeck.HostConfig{
					Name: fmt.Sprintf("host-%04d", id), IP: fmt.Sprintf("10.0.%d.%d", id/250, id%250+1), Port: 22,
					Username: "ubuntu", AuthType: sshdeck.AuthKey, KeyType: "auto", DefaultPath: "/",
					EnableTerminal: true, EnableTunnel: true, EnableFileManager: true,
				}}
				ad := func(field string) string { return secret.AD("host", owner, strconv.FormatInt(id, 10), field) }
				sealed, err := sealer.SealCredentials(ctx, sshdeck.Credentials{Key: bigKey(id, quotaKey)}, ad, nil)
				if err == nil {
					h.Sealed = sealed
					err = store.CreateHost(ctx, h, config.DefaultLimits.Hosts)
				}
				if err != nil {
					select {
					case errs <- fmt.Errorf("host %d: %w", id, err):
					default:
					}
				}
			}
		})
	}
	for range n {
		id, err := store.NextHostID(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		ids <- id
	}
	close(ids)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// readHostList decodes a JSON array of hosts a host at a time, counting
// them and the keys of quotaKey bytes.
func readHostList(t testing.TB, r io.Reader) (hosts, keys int) {
	t.Helper()
	dec := json.NewDecoder(r)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		t.Fatalf("the answer does not start an array: %v %v", tok, err)
	}
	for dec.More() {
		var h struct {
			ID  int64  `json:"id"`
			Key string `json:"key"`
		}
		if err := dec.Decode(&h); err != nil {
			t.Fatalf("host %d: %v", hosts+1, err)
		}
		hosts++
		if len(h.Key) == quotaKey {
			keys++
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		t.Fatalf("the answer does not end its array: %v %v", tok, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("something follows the array: %v", err)
	}
	return hosts, keys
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
