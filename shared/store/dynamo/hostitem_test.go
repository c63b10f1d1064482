package dynamo

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// hostPage is a page of n host items as a Query returns them: hosts as the
// service makes them, with tags, a tunnel connection, sealed credentials
// (a private key is the bulk of an item) and times.
func hostPage(n int) []map[string]types.AttributeValue {
	at := time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.UTC)
	page := make([]map[string]types.AttributeValue, n)
	for i := range page {
		h := &sshdeck.Host{Owner: "usr_0123456789abcdef", ID: int64(i + 1), Version: 3, CreatedAt: at, UpdatedAt: at.Add(time.Duration(i) * time.Second)}
		h.HostConfig = sshdeck.HostConfig{
			Name: fmt.Sprintf("web-%04d", i), IP: "10.0.12.34", Port: 22, Username: "deploy", Folder: "production",
			Tags: []string{"prod", "eu-west-1", "web"}, AuthType: sshdeck.AuthKey, KeyType: "ssh-ed25519",
			EnableTerminal: true, EnableFileManager: true, DefaultPath: "/srv/app",
			TunnelConnections: []sshdeck.TunnelConnection{{SourcePort: 8080, EndpointPort: 80, EndpointHost: "localhost", MaxRetries: 3, RetryInterval: 10}},
		}
		h.Sealed = sshdeck.SealedCredentials{Key: make([]byte, 480), KeyPassword: make([]byte, 60)}
		page[i] = hostKey(h.Owner, h.ID).with(hostAttrs(h))
	}
	return page
}

// BenchmarkDecodeHosts decodes a page of 1000 host items (a list of hosts
// reads such pages): "reflection" as the store did before schema 2
// (attributevalue into a struct by its tags; reflectedHost stands for the
// domain type it decoded into), "by-hand" as decodeHost does.
func BenchmarkDecodeHosts(b *testing.B) {
	page := hostPage(1000)
	want, err := decodeHost(page[0])
	if err != nil {
		b.Fatal(err)
	}
	var first reflectedHost
	if err := attributevalue.UnmarshalMap(page[0], &first); err != nil || !reflect.DeepEqual(first.host(), want) {
		b.Fatalf("the two decoders differ:\n reflection %+v (%v)\n by hand    %+v", first.host(), err, want)
	}
	b.Run("reflection", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, item := range page {
				var h reflectedHost
				if err := attributevalue.UnmarshalMap(item, &h); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("by-hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, item := range page {
				if _, err := decodeHost(item); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// reflectedHost is sshdeck.Host's shape under the item's attribute names,
// for the reflection baseline of BenchmarkDecodeHosts only.
type reflectedHost struct {
	Owner             string                `dynamodbav:"owner"`
	ID                int64                 `dynamodbav:"id"`
	Version           int64                 `dynamodbav:"version"`
	Name              string                `dynamodbav:"name"`
	IP                string                `dynamodbav:"ip"`
	Port              int                   `dynamodbav:"port"`
	Username          string                `dynamodbav:"username"`
	Folder            string                `dynamodbav:"folder"`
	Tags              []string              `dynamodbav:"tags"`
	Pin               bool                  `dynamodbav:"pin"`
	AuthType          sshdeck.AuthType      `dynamodbav:"authType"`
	KeyType           string                `dynamodbav:"keyType"`
	EnableTerminal    bool                  `dynamodbav:"enableTerminal"`
	EnableTunnel      bool                  `dynamodbav:"enableTunnel"`
	EnableFileManager bool                  `dynamodbav:"enableFileManager"`
	DefaultPath       string                `dynamodbav:"defaultPath"`
	TunnelConnections []reflectedConnection `dynamodbav:"tunnelConnections"`
	Sealed            struct {
		Password    []byte `dynamodbav:"password"`
		Key         []byte `dynamodbav:"key"`
		KeyPassword []byte `dynamodbav:"keyPassword"`
	} `dynamodbav:"sealed"`
	CreatedAt time.Time `dynamodbav:"createdAt"`
	UpdatedAt time.Time `dynamodbav:"updatedAt"`
}

type reflectedConnection struct {
	SourcePort    int    `dynamodbav:"sourcePort"`
	EndpointPort  int    `dynamodbav:"endpointPort"`
	EndpointHost  string `dynamodbav:"endpointHost"`
	MaxRetries    int    `dynamodbav:"maxRetries"`
	RetryInterval int    `dynamodbav:"retryInterval"`
	AutoStart     bool   `dynamodbav:"autoStart"`
}

// host is the domain value, to check that both decoders read the same.
func (r *reflectedHost) host() *sshdeck.Host {
	h := &sshdeck.Host{Owner: r.Owner, ID: r.ID, Version: r.Version, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	h.HostConfig = sshdeck.HostConfig{
		Name: r.Name, IP: r.IP, Port: r.Port, Username: r.Username, Folder: r.Folder, Tags: r.Tags, Pin: r.Pin,
		AuthType: r.AuthType, KeyType: r.KeyType, EnableTerminal: r.EnableTerminal, EnableTunnel: r.EnableTunnel,
		EnableFileManager: r.EnableFileManager, DefaultPath: r.DefaultPath,
	}
	for _, c := range r.TunnelConnections {
		h.TunnelConnections = append(h.TunnelConnections, sshdeck.TunnelConnection(c))
	}
	h.Sealed = sshdeck.SealedCredentials(r.Sealed)
	return h
}
