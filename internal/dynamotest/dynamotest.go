// Package dynamotest runs an in-process DynamoDB (minidyn's HTTP server)
// holding sshdeck's table, for the tests of the DynamoDB store and of the
// Lambda functions over it. It counts the calls each operation receives, so
// that tests can pin how many calls a code path makes, and records the IAM
// actions those calls need and the indexes they name, so that tests can
// check them against what shared/store/dynamo/iam grants.
package dynamotest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	miniserver "github.com/truora/minidyn/server"

	"github.com/sshdeck/sshdeck/shared/store/dynamo"
)

// Server is an in-process DynamoDB (minidyn's HTTP server under httptest)
// holding sshdeck's table.
type Server struct {
	URL    string // the endpoint, for NewClient
	Table  string // the table made by dynamo.CreateTable
	Client *dynamodb.Client

	srv     *httptest.Server
	mu      sync.Mutex
	calls   map[string]int  // by operation
	actions map[string]bool // IAM actions the calls needed
	indexes map[string]bool // indexes the calls named
}

// Start starts a server with an empty table and stops it when the test ends.
// The table's creation is not counted.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := New(t.Context())
	if err != nil {
		t.Fatalf("dynamotest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// New starts a server with an empty table until Close (for the benchmarks,
// which are not tests). The table's creation is not counted.
func New(ctx context.Context) (*Server, error) {
	s := &Server{Table: "sshdeck", calls: map[string]int{}, actions: map[string]bool{}, indexes: map[string]bool{}}
	s.srv = httptest.NewServer(s.handler(miniserver.NewServer()))
	s.URL = s.srv.URL
	s.Client = NewClient(s.URL)
	if err := dynamo.CreateTable(ctx, s.Client, s.Table); err != nil {
		s.Close()
		return nil, err
	}
	s.ResetCalls()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// handler records each request and hands it to minidyn.
func (s *Server) handler(mini http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body)) // minidyn reads it again
		s.record(r, body)
		mini.ServeHTTP(w, r)
	})
}

// request is what record reads of a request body: the index a Query or
// Scan names, and the items of a transaction.
type request struct {
	IndexName     string
	TransactItems []map[string]json.RawMessage
}

// itemActions is the IAM action each kind of transaction item needs: IAM
// authorizes TransactWriteItems and TransactGetItems item by item, and has
// no action of their own names.
var itemActions = map[string]string{
	"ConditionCheck": "dynamodb:ConditionCheckItem",
	"Put":            "dynamodb:PutItem",
	"Update":         "dynamodb:UpdateItem",
	"Delete":         "dynamodb:DeleteItem",
	"Get":            "dynamodb:GetItem",
}

// record counts the operation a request names in its X-Amz-Target header
// ("DynamoDB_20120810.GetItem"), and notes the IAM actions it needs and the
// index it names.
func (s *Server) record(r *http.Request, body []byte) {
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	// A transaction unreadable here stays its operation's name, which is no
	// IAM action: it cannot pass for granted.
	actions := []string{"dynamodb:" + op}
	var req request
	err := json.Unmarshal(body, &req)
	if err == nil && (op == "TransactWriteItems" || op == "TransactGetItems") {
		actions = transactionActions(op, req.TransactItems)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[op]++
	for _, a := range actions {
		s.actions[a] = true
	}
	if req.IndexName != "" {
		s.indexes[req.IndexName] = true
	}
}

// transactionActions returns the actions of a transaction's items.
func transactionActions(op string, items []map[string]json.RawMessage) []string {
	var actions []string
	for _, item := range items {
		for kind := range item {
			action, ok := itemActions[kind]
			if !ok {
				// No such action: no policy grants it, so a check names it.
				action = "dynamodb:" + op + "." + kind
			}
			actions = append(actions, action)
		}
	}
	return actions
}

// Calls returns the number of calls of each operation since Start or the
// last ResetCalls.
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

// Actions returns the IAM actions ("dynamodb:GetItem") that the calls since
// Start or the last ResetCalls needed, sorted: each operation's own, but a
// transaction's are those of its items (ConditionCheck is
// dynamodb:ConditionCheckItem, Put dynamodb:PutItem, …).
func (s *Server) Actions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.actions))
}

// Indexes returns the indexes ("gsi1") that the calls since Start or the
// last ResetCalls named, sorted.
func (s *Server) Indexes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.indexes))
}

// ResetCalls sets every count back to zero and forgets the actions and
// indexes.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.calls)
	clear(s.actions)
	clear(s.indexes)
}

// CheckGranted fails t when the calls since Start or the last ResetCalls
// needed an action outside granted, or named an index: granted is what the
// IAM policy of who (a route's function, the authorizer, the tunnel
// service; see shared/store/dynamo/iam) allows, on the table alone.
func (s *Server) CheckGranted(t testing.TB, who string, granted []string) {
	t.Helper()
	var missing []string
	for _, a := range s.Actions() {
		if !slices.Contains(granted, a) {
			missing = append(missing, a)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%s: its calls needed %v, which its IAM policy (shared/store/dynamo/iam: %v) does not grant", who, missing, granted)
	}
	if indexes := s.Indexes(); len(indexes) > 0 {
		t.Errorf("%s: its calls named the index %v; its IAM policy grants the table only", who, indexes)
	}
}

// NewClient returns a DynamoDB client for the server at url, built as the
// store's own clients are (dynamo.NewClient). It retries one error only,
// once (see closedConnection): minidyn does not throttle, and any other
// retry would hide an error and skew the counts.
func NewClient(url string) *dynamodb.Client {
	return dynamo.NewClient(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("minidyn", "minidyn", ""),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 2
				o.Retryables = []retry.IsErrorRetryable{closedConnection{}}
				o.RateLimiter = ratelimit.None
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			})
		},
	}, url)
}

// closedConnection is the SDK failing to read an answer of this loopback
// server with "use of closed network connection": about one large Query
// answer (over 10 KB) in a few thousand, in the SDK's deserializer (also seen
// in aws-sdk-go-v2 issues 1825 and 2737), never a fault of the store. A test
// that pins the calls of such a request would see one more.
type closedConnection struct{}

func (closedConnection) IsErrorRetryable(err error) aws.Ternary {
	return aws.BoolTernary(errors.Is(err, net.ErrClosed))
}

// Env is the environment that points a process (a Lambda entry point, the
// sshdeck command) at the server as if it were DynamoDB: its endpoint and
// table, a region, dummy credentials, and nothing of the machine's own AWS
// set-up (no config or credentials file, no instance metadata).
func (s *Server) Env() []string {
	return []string{
		"SSHDECK_TABLE=" + s.Table,
		"AWS_ENDPOINT_URL_DYNAMODB=" + s.URL,
		"AWS_REGION=eu-west-1",
		"AWS_ACCESS_KEY_ID=AKIDEXAMPLE",
		"AWS_SECRET_ACCESS_KEY=example-secret",
		"AWS_SESSION_TOKEN=",
		"AWS_PROFILE=",
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
		"AWS_EC2_METADATA_DISABLED=true",
	}
}
