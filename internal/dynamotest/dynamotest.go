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
	"regexp"
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
	"github.com/sshdeck/sshdeck/shared/store/dynamo/iam"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/schema"
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
	// leading keys (IAM's dynamodb:LeadingKeys: the partition keys) of
	// the calls, by the action that needed them and what it read (the
	// table, or an index)
	leading map[target]map[string]bool
}

// target is an action on the table (index "") or on an index: what an IAM
// statement's resource and actions name.
type target struct{ index, action string }

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
	s := &Server{Table: "sshdeck", calls: map[string]int{}, actions: map[string]bool{}, indexes: map[string]bool{},
		leading: map[target]map[string]bool{}}
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
// Scan names, the items of a transaction, and what holds the partition
// keys of the items a call touches.
type request struct {
	IndexName     string
	TransactItems []map[string]json.RawMessage

	Key, Item                 map[string]attr
	KeyConditionExpression    string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues map[string]attr
	RequestItems              map[string]json.RawMessage // BatchWriteItem's and BatchGetItem's
}

// attr is an attribute value, of which only strings matter here (the
// partition key is one).
type attr struct{ S *string }

// transactItem is one item of a transaction (its Put, Update, Delete,
// ConditionCheck or Get).
type transactItem struct {
	Key, Item map[string]attr
}

// batchWrite and batchGet are a table's part of a BatchWriteItem and of a
// BatchGetItem.
type batchWrite []struct {
	PutRequest    *struct{ Item map[string]attr }
	DeleteRequest *struct{ Key map[string]attr }
}
type batchGet struct{ Keys []map[string]attr }

// keyCondition finds the partition key's equality in a Query's
// KeyConditionExpression: "#pk = :pk" (a name or a placeholder of one).
var keyCondition = regexp.MustCompile(`(#?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)`)

// leadingKeys returns, by IAM action, the partition keys the call touches:
// what dynamodb:LeadingKeys holds for it. A Query of an index names the
// index's partition key (schema.IndexPartitionKey for schema.Index), which
// is what its leading key is. A call whose keys cannot be read (none here)
// gets "?", which no policy allows.
func leadingKeys(op string, req *request) map[string][]string {
	pk := func(m map[string]attr) string {
		if v, ok := m[schema.PartitionKey]; ok && v.S != nil {
			return *v.S
		}
		return "?"
	}
	out := map[string][]string{}
	switch op {
	case "GetItem", "DeleteItem", "UpdateItem":
		out["dynamodb:"+op] = []string{pk(req.Key)}
	case "PutItem":
		out["dynamodb:"+op] = []string{pk(req.Item)}
	case "Query":
		key, partitionKey := "?", schema.PartitionKey
		switch req.IndexName {
		case "":
		case schema.Index:
			partitionKey = schema.IndexPartitionKey
		default:
			partitionKey = "" // an index this package does not know
		}
		for _, m := range keyCondition.FindAllStringSubmatch(req.KeyConditionExpression, -1) {
			name := m[1]
			if n, ok := req.ExpressionAttributeNames[name]; ok {
				name = n
			}
			if v, ok := req.ExpressionAttributeValues[m[2]]; ok && partitionKey != "" && name == partitionKey && v.S != nil {
				key = *v.S
			}
		}
		out["dynamodb:Query"] = []string{key}
	case "TransactWriteItems", "TransactGetItems":
		for _, item := range req.TransactItems {
			for kind, raw := range item {
				var ti transactItem
				json.Unmarshal(raw, &ti)
				action, ok := itemActions[kind]
				if !ok {
					action = "dynamodb:" + op + "." + kind
				}
				k := pk(ti.Key)
				if kind == "Put" {
					k = pk(ti.Item)
				}
				out[action] = append(out[action], k)
			}
		}
	case "BatchWriteItem":
		for _, raw := range req.RequestItems {
			var items batchWrite
			json.Unmarshal(raw, &items)
			for _, it := range items {
				switch {
				case it.PutRequest != nil:
					out["dynamodb:BatchWriteItem"] = append(out["dynamodb:BatchWriteItem"], pk(it.PutRequest.Item))
				case it.DeleteRequest != nil:
					out["dynamodb:BatchWriteItem"] = append(out["dynamodb:BatchWriteItem"], pk(it.DeleteRequest.Key))
				}
			}
		}
	case "BatchGetItem":
		for _, raw := range req.RequestItems {
			var items batchGet
			json.Unmarshal(raw, &items)
			for _, k := range items.Keys {
				out["dynamodb:BatchGetItem"] = append(out["dynamodb:BatchGetItem"], pk(k))
			}
		}
	default: // Scan and the rest: no leading key IAM could hold to a partition
		out["dynamodb:"+op] = []string{"?"}
	}
	return out
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
	amzTarget := r.Header.Get("X-Amz-Target")
	op := amzTarget[strings.LastIndexByte(amzTarget, '.')+1:]
	// A transaction unreadable here stays its operation's name, which is no
	// IAM action: it cannot pass for granted.
	actions := []string{"dynamodb:" + op}
	var req request
	err := json.Unmarshal(body, &req)
	if err == nil && (op == "TransactWriteItems" || op == "TransactGetItems") {
		actions = transactionActions(op, req.TransactItems)
	}

	var keys map[string][]string
	if err == nil {
		keys = leadingKeys(op, &req)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[op]++
	for _, a := range actions {
		s.actions[a] = true
	}
	for a, pks := range keys {
		tg := target{req.IndexName, a}
		if s.leading[tg] == nil {
			s.leading[tg] = map[string]bool{}
		}
		for _, pk := range pks {
			s.leading[tg][pk] = true
		}
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
	clear(s.leading)
}

// LeadingKeys returns, by IAM action, the partition keys of the items of
// the table (not of an index: IndexLeadingKeys) the calls since Start or
// the last ResetCalls touched (what IAM's dynamodb:LeadingKeys condition
// sees), sorted.
func (s *Server) LeadingKeys() map[string][]string { return s.IndexLeadingKeys("") }

// IndexLeadingKeys is LeadingKeys of the calls that read the index (a
// Query naming it): the index's partition keys, by action.
func (s *Server) IndexLeadingKeys(index string) map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for tg, pks := range s.leading {
		if tg.index == index {
			out[tg.action] = slices.Sorted(maps.Keys(pks))
		}
	}
	return out
}

// CheckPolicy fails t when the calls since Start or the last ResetCalls
// needed an action outside policy (the role of who: shared/store/dynamo/
// iam's RoutePolicy, AuthorizerPolicy, TunnelServicePolicy), named an
// index no statement of it is on, made an action on the table or an index
// that only a statement on the other grants, or touched a partition that
// no statement on what the call read allows for its action: the calls must
// pass IAM as the CDK app writes the policy (a resource per statement, the
// table's ARN or the index's, and dynamodb:LeadingKeys conditions).
func (s *Server) CheckPolicy(t testing.TB, who string, policy iam.Policy) {
	t.Helper()
	s.checkActions(t, who, policy.Actions())
	for _, index := range s.Indexes() {
		if !slices.Contains(policy.Indexes(), index) {
			t.Errorf("%s: its calls named the index %s, on which its IAM policy (shared/store/dynamo/iam: %v) has no statement", who, index, policy)
		}
	}
	s.mu.Lock()
	targets := slices.SortedFunc(maps.Keys(s.leading), func(a, b target) int {
		return strings.Compare(a.index+" "+a.action, b.index+" "+b.action)
	})
	s.mu.Unlock()
	for _, tg := range targets {
		where := ""
		if tg.index != "" {
			where = " of the index " + tg.index
			if !slices.Contains(policy.Indexes(), tg.index) {
				continue // said above
			}
		}
		if !slices.Contains(policy.Actions(), tg.action) {
			continue // said by checkActions
		}
		if !policy.Grants(tg.index, tg.action) {
			on := "the table"
			if tg.index != "" {
				on = "the index " + tg.index
			}
			t.Errorf("%s: %s on %s, which its IAM policy (shared/store/dynamo/iam: %v) grants elsewhere only", who, tg.action, on, policy)
			continue
		}
		for _, pk := range s.IndexLeadingKeys(tg.index)[tg.action] {
			if !policy.AllowsOn(tg.index, tg.action, pk) {
				t.Errorf("%s: %s on the partition %q%s, which its IAM policy (shared/store/dynamo/iam: %v) does not allow", who, tg.action, pk, where, policy)
			}
		}
	}
}

// CheckGranted fails t when the calls since Start or the last ResetCalls
// needed an action outside granted, or named an index: granted is what the
// IAM policy of who (a route's function, the authorizer, the tunnel
// service; see shared/store/dynamo/iam) allows, on the table alone.
func (s *Server) CheckGranted(t testing.TB, who string, granted []string) {
	t.Helper()
	s.checkActions(t, who, granted)
	if indexes := s.Indexes(); len(indexes) > 0 {
		t.Errorf("%s: its calls named the index %v; its IAM policy grants the table only", who, indexes)
	}
}

// checkActions fails t when the calls needed an action outside granted.
func (s *Server) checkActions(t testing.TB, who string, granted []string) {
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
