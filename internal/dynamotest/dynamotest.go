// Package dynamotest runs an in-process DynamoDB (minidyn's HTTP server)
// holding sshdeck's table, for the tests of the DynamoDB store and of the
// Lambda functions over it. It counts the calls each operation receives, so
// that tests can pin how many calls a code path makes.
package dynamotest

import (
	"errors"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
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

	mu    sync.Mutex
	calls map[string]int
}

// Start starts a server with an empty table and stops it when the test ends.
// The table's creation is not counted.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{Table: "sshdeck", calls: map[string]int{}}
	hs := httptest.NewServer(s.handler(miniserver.NewServer()))
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	s.Client = NewClient(hs.URL)
	if err := dynamo.CreateTable(t.Context(), s.Client, s.Table); err != nil {
		t.Fatalf("dynamotest: %v", err)
	}
	s.ResetCalls()
	return s
}

// handler counts each request and hands it to minidyn.
func (s *Server) handler(mini http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.count(r)
		mini.ServeHTTP(w, r)
	})
}

// count records the operation a request names in its X-Amz-Target header
// ("DynamoDB_20120810.GetItem").
func (s *Server) count(r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[op]++
}

// Calls returns the number of calls of each operation since Start or the
// last ResetCalls.
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

// ResetCalls sets every count back to zero.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.calls)
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
