package main

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/internal/dynamotest"
	"github.com/sshdeck/sshdeck/internal/gobuild"
	"github.com/sshdeck/sshdeck/internal/kmstest"
	"github.com/sshdeck/sshdeck/internal/logbuf"
	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/iam"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

var binary string

func TestMain(m *testing.M) {
	var remove func()
	binary, remove = gobuild.Command("tunnel-service")
	code := m.Run()
	remove()
	os.Exit(code)
}

// replica is one tunnel-service process.
type replica struct {
	cmd    *exec.Cmd
	url    string
	exited chan struct{} // closed when the process has exited
	err    error         // its exit, once exited is closed
	log    logbuf.Buffer // its log lines, for failure messages
}

func startReplica(t *testing.T, env []string, id string) *replica {
	t.Helper()
	cmd := exec.Command(binary)
	cmd.Env = append(env, "SSHDECK_REPLICA_ID="+id, "SSHDECK_TUNNEL_ADDR=127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &replica{cmd: cmd, exited: make(chan struct{})}
	urls := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		scan := bufio.NewScanner(stdout)
		for scan.Scan() {
			r.log.Write(append(scan.Bytes(), '\n'))
			var line struct {
				Msg string
				URL string `json:"tunnel_service"`
			}
			if json.Unmarshal(scan.Bytes(), &line) == nil && line.Msg == "serving" {
				urls <- line.URL
			}
		}
	}()
	go func() {
		<-scanned // Wait closes stdout: read it all first
		r.err = cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-r.exited
		if t.Failed() {
			t.Logf("replica %s log:\n%s", id, r.log.String())
		}
	})
	// No deadline: a process starting on a busy machine takes what it
	// takes; its exit ends the wait.
	select {
	case r.url = <-urls:
	case <-r.exited:
		t.Fatalf("replica %s exited before serving: %v", id, r.err)
	}
	return r
}

func call(t *testing.T, method, url, token string, body any) (int, []byte) {
	t.Helper()
	var in io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		in = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, in)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// TestTwoReplicasOverDynamoDB: two tunnel-service processes share a
// DynamoDB table (minidyn) and KMS (a fake); the lease holder is killed
// with SIGKILL, and the other process takes its autoStart tunnel over. Their
// calls need only the IAM actions of the service's task role.
func TestTwoReplicasOverDynamoDB(t *testing.T) {
	sshdtest.Require(t)
	key, pub := sshdtest.NewKey(t, "")
	hosts := sshdtest.Config{AuthorizedKeys: []ssh.PublicKey{pub}}
	source, endpoint := sshdtest.Start(t, hosts), sshdtest.Start(t, hosts)
	echo := sshdtest.StartEcho(t)
	db, keys, store, token := aliceInTheCloud(t)
	env := append(os.Environ(), db.Env()...)
	env = append(env, "SSHDECK_KMS_KEY_ID="+keys.KeyID, "AWS_ENDPOINT_URL_KMS="+keys.URL, "SSHDECK_TUNNEL_LEASE_TTL=1500ms")

	// From here on the calls are the replicas', but for the test's own reads
	// of the lease holder (GetItem of a tunnel, which the service needs
	// anyway). Checked once both replicas are killed (cleanups run last
	// first).
	alice := mustUser(t, store)
	db.ResetCalls()
	t.Cleanup(func() { db.CheckPolicy(t, "tunnel service", iam.TunnelServicePolicy()) })
	a := startReplica(t, env, "a")
	b := startReplica(t, env, "b")
	port := sshdtest.FreePort(t)
	status, body := call(t, "POST", a.url+"/ssh/tunnel/connect", token, map[string]any{
		"name": "auto", "autoStart": true, "maxRetries": 100, "retryInterval": 200,
		"sourceIP": "127.0.0.1", "sourceSSHPort": source.Port, "sourceUsername": "root", "sourceSSHKey": key,
		"endpointIP": "127.0.0.1", "endpointSSHPort": endpoint.Port, "endpointUsername": "root", "endpointSSHKey": key,
		"sourcePort": echo, "endpointPort": port,
	})
	if status != http.StatusOK {
		t.Fatalf("connect: %d %s", status, body)
	}
	holder := func() string {
		tn, err := store.Tunnel(context.Background(), alice, "auto")
		if err != nil {
			t.Fatal(err)
		}
		return tn.Lease.Holder
	}
	connected := func(r *replica) func() bool {
		return func() bool {
			status, body := call(t, "GET", r.url+"/ssh/tunnel/status/auto", token, nil)
			return status == http.StatusOK && strings.Contains(string(body), `"status":"connected"`)
		}
	}
	sshdtest.WaitUntil(t, "connected, read through b", connected(b))
	if h := holder(); h != "a" {
		t.Fatalf("lease holder %q, want a (which took the connect)", h)
	}
	if err := sshdtest.RoundTrip(port, 10<<20); err != nil {
		t.Fatal(err)
	}
	// a's heartbeat writes the counts into the table; b answers with them.
	const carried = 10 << 20
	sshdtest.WaitUntil(t, "a's counts read through b", func() bool {
		st := tunnelStatus(t, b, token, "auto")
		return st.BytesIn != nil && *st.BytesIn == carried && st.BytesOut != nil && *st.BytesOut == carried
	})

	a.cmd.Process.Kill() // SIGKILL: no lease released, no status written
	<-a.exited
	sshdtest.WaitPort(t, port, true)
	sshdtest.WaitUntil(t, "b holding the tunnel", func() bool { return holder() == "b" })
	sshdtest.WaitUntil(t, "connected through b", connected(b))
	// For the moment between b taking the lease and b writing
	// "connecting", the status read is still a's last one, "connected":
	// wait for traffic itself.
	sshdtest.WaitUntil(t, "traffic through b", func() bool { return sshdtest.RoundTrip(port, 1<<10) == nil })
	if err := sshdtest.RoundTrip(port, 10<<20); err != nil {
		t.Fatal(err)
	}
	// b goes on from a's counts: the tunnel's, not a replica's.
	sshdtest.WaitUntil(t, "b's counts on top of a's", func() bool {
		st := tunnelStatus(t, b, token, "auto")
		return st.BytesIn != nil && *st.BytesIn >= 2*carried && st.Reconnects == 1
	})
	if status, body := call(t, "GET", b.url+"/healthz", "", nil); status != http.StatusOK {
		t.Fatalf("healthz: %d %s", status, body)
	}
	// Over a table, each replica writes its CloudWatch lines among its
	// log lines, the first at start (tunnel-service/emf checks them whole).
	for _, r := range []*replica{a, b} {
		if line := emfLine(r); line == nil || line.AWS.CloudWatchMetrics[0].Namespace != "sshdeck" || line.Service != "tunnel" {
			t.Errorf("no EMF line of namespace sshdeck, Service tunnel, in a replica's log:\n%s", r.log.String())
		}
	}
}

// tunnelStatus reads a tunnel's status through the replica.
func tunnelStatus(t *testing.T, r *replica, token, name string) tunnel.Status {
	t.Helper()
	status, body := call(t, "GET", r.url+"/ssh/tunnel/status/"+name, token, nil)
	var st tunnel.Status
	if status != http.StatusOK || json.Unmarshal(body, &st) != nil {
		t.Fatalf("status of %s: %d %s", name, status, body)
	}
	return st
}

// emfRecord is what TestTwoReplicasOverDynamoDB reads of an EMF line.
type emfRecord struct {
	AWS struct {
		CloudWatchMetrics []struct{ Namespace string }
	} `json:"_aws"`
	Service string
}

// emfLine returns the first EMF line in the replica's log, or nil.
func emfLine(r *replica) *emfRecord {
	for line := range strings.Lines(r.log.String()) {
		var rec emfRecord
		if json.Unmarshal([]byte(line), &rec) == nil && len(rec.AWS.CloudWatchMetrics) > 0 {
			return &rec
		}
	}
	return nil
}

// TestStoredHostsOverDynamoDB: a tunnel-service process over DynamoDB
// (minidyn) and KMS (a fake) connects a tunnel whose source (behind a
// stored jump host) and endpoint are the caller's stored hosts, saved as
// the API saves them, their credentials sealed under KMS: it reads them
// with the IAM actions and partitions of the service's task role alone.
func TestStoredHostsOverDynamoDB(t *testing.T) {
	sshdtest.Require(t)
	key, pub := sshdtest.NewKey(t, "")
	cfg := sshdtest.Config{AuthorizedKeys: []ssh.PublicKey{pub}}
	jump, source, endpoint := sshdtest.Start(t, cfg), sshdtest.Start(t, cfg), sshdtest.Start(t, cfg)
	echo := sshdtest.StartEcho(t)
	db, keys, store, token := aliceInTheCloud(t)
	alice := mustUser(t, store)
	svc := hosts.NewService(store, store, secret.NewSealer(secret.NewKMSKeyring(keys.Client(), keys.KeyID)), nil)
	save := func(name string, port int, hops ...sshdeck.JumpHost) int64 {
		r, err := svc.Create(t.Context(), alice, &hosts.Input{Name: name, IP: "127.0.0.1", Port: &port, Username: "root", Key: &key, JumpHosts: hops})
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	jumpID := save("jump", jump.Port)
	sourceID := save("source", source.Port, sshdeck.JumpHost{HostID: jumpID})
	endpointID := save("endpoint", endpoint.Port)
	env := append(os.Environ(), db.Env()...)
	env = append(env, "SSHDECK_KMS_KEY_ID="+keys.KeyID, "AWS_ENDPOINT_URL_KMS="+keys.URL)

	db.ResetCalls()
	t.Cleanup(func() { db.CheckPolicy(t, "tunnel service", iam.TunnelServicePolicy()) })
	r := startReplica(t, env, "a")
	port := sshdtest.FreePort(t)
	status, body := call(t, "POST", r.url+"/ssh/tunnel/connect", token, map[string]any{
		"name": "stored", "sourceHostId": sourceID, "endpointHostId": endpointID,
		"sourcePort": echo, "endpointPort": port, "maxRetries": 100, "retryInterval": 200,
	})
	if status != http.StatusOK {
		t.Fatalf("connect: %d %s", status, body)
	}
	sshdtest.WaitUntil(t, "connected", func() bool {
		status, body := call(t, "GET", r.url+"/ssh/tunnel/status/stored", token, nil)
		return status == http.StatusOK && strings.Contains(string(body), `"status":"connected"`)
	})
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
	if clients, err := source.Clients(); err != nil || len(clients) == 0 || !jump.Holds(clients[0]) {
		t.Errorf("the source's connections come from %v (%v), not from the jump host's sshd", clients, err)
	}
	// The host reads are GetItems of the owner's partition, as the known
	// hosts' are; CheckPolicy holds every call to the role's policy.
	if pks := db.LeadingKeys()["dynamodb:GetItem"]; !slices.Contains(pks, "OWNER#"+alice) {
		t.Errorf("GetItem on %v, want the hosts' OWNER#%s among them", pks, alice)
	}
}

func mustUser(t *testing.T, store *dynamo.Store) string {
	u, err := store.UserByName(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}

// TestDockerfile checks what can be checked without a Docker engine: the
// image is distroless static and runs as a non-root user, and the binary
// built as the Dockerfile builds it is static (no ELF interpreter).
func TestDockerfile(t *testing.T) {
	df, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(df)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^FROM gcr\.io/distroless/static[^\s]*:nonroot$`),
		regexp.MustCompile(`(?m)^USER 65532:65532$`),
		regexp.MustCompile(`CGO_ENABLED=0`),
		regexp.MustCompile(`(?m)^ENTRYPOINT \["/tunnel-service"\]$`),
	} {
		if !want.MatchString(text) {
			t.Errorf("Dockerfile lacks %s", want)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^COPY (\S+/) `).FindAllStringSubmatch(text, -1) {
		if _, err := os.Stat(filepath.Join("..", m[1])); err != nil {
			t.Errorf("Dockerfile copies %s, which does not exist", m[1])
		}
	}
	out := filepath.Join(t.TempDir(), "tunnel-service")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("static build: %v\n%s", err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary has an ELF interpreter: it is not static")
		}
	}
	if f.Machine != elf.EM_AARCH64 {
		t.Errorf("machine %v, want arm64 (Fargate Graviton)", f.Machine)
	}
}

// aliceInTheCloud starts DynamoDB (minidyn) and KMS (a fake), and makes the
// user alice and a token of hers in the table.
func aliceInTheCloud(t *testing.T) (*dynamotest.Server, *kmstest.Server, *dynamo.Store, string) {
	t.Helper()
	db, keys := dynamotest.Start(t), kmstest.Start(t)
	store := dynamo.New(db.Client, db.Table)
	admin := auth.NewAdmin(store, nil, nil)
	if _, err := admin.AddUser(t.Context(), "alice", false); err != nil {
		t.Fatal(err)
	}
	token, _, err := admin.CreateToken(t.Context(), "alice", "test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return db, keys, store, token
}
