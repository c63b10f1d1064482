package tunnel

import (
	"fmt"
	"strings"
	"time"

	"github.com/sshdeck/sshdeck/shared/check"
	"github.com/sshdeck/sshdeck/shared/hostchain"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/sshkey"
)

// Limits and defaults of a connect request (API.md, operation 1) besides
// those it shares with hosts, which are sshdeck's (limits.go): the SSH
// fields of each hop, and the retries.
const (
	// MaxNameLen is the longest tunnel name, in characters.
	MaxNameLen = 128
	// MinRetryInterval is the shortest retryInterval, in milliseconds: a
	// smaller one is raised to it (API.md), so that no tunnel redials a
	// host more than once a second.
	MinRetryInterval = 1000
	// A connect request's retryInterval is in milliseconds.
	defaultRetryInterval = int(sshdeck.DefaultTunnelRetryInterval / time.Millisecond)
	maxRetryInterval     = int(sshdeck.MaxTunnelRetryInterval / time.Millisecond)
	maxHostKeyPin        = 16 << 10
)

// reservedName is a name a tunnel may not take: its status address would
// be the status stream's. Nor may it be "." or "..", which no path holds.
const reservedName = "stream"

// ConnectRequest is the body of POST /ssh/tunnel/connect. Pointer fields
// tell absent (a default) from a value.
//
// SourceHostID and EndpointHostID name one of the caller's stored hosts
// instead of that side's address and credential fields, which must then
// be absent (stored.go): the Manager reads the host, and the source's
// route of jump hosts, from the store.
type ConnectRequest struct {
	Name     string `json:"name"`
	HostName string `json:"hostName"`

	SourceHostID   *int64 `json:"sourceHostId"`
	EndpointHostID *int64 `json:"endpointHostId"`

	SourceIP          string  `json:"sourceIP"`
	SourceSSHPort     *int    `json:"sourceSSHPort"`
	SourceUsername    string  `json:"sourceUsername"`
	SourcePassword    string  `json:"sourcePassword"`
	SourceAuthMethod  string  `json:"sourceAuthMethod"`
	SourceSSHKey      string  `json:"sourceSSHKey"`
	SourceKeyPassword string  `json:"sourceKeyPassword"`
	SourceKeyType     *string `json:"sourceKeyType"`
	SourceHostKey     string  `json:"sourceHostKey"`

	EndpointIP          string  `json:"endpointIP"`
	EndpointSSHPort     *int    `json:"endpointSSHPort"`
	EndpointUsername    string  `json:"endpointUsername"`
	EndpointPassword    string  `json:"endpointPassword"`
	EndpointAuthMethod  string  `json:"endpointAuthMethod"`
	EndpointSSHKey      string  `json:"endpointSSHKey"`
	EndpointKeyPassword string  `json:"endpointKeyPassword"`
	EndpointKeyType     *string `json:"endpointKeyType"`
	EndpointHostKey     string  `json:"endpointHostKey"`

	SourcePort    *int `json:"sourcePort"`
	EndpointPort  *int `json:"endpointPort"`
	MaxRetries    *int `json:"maxRetries"`
	RetryInterval *int `json:"retryInterval"` // ms
	AutoStart     bool `json:"autoStart"`
	IsPinned      bool `json:"isPinned"`
	// Mode is "relay" (empty: the default) or "direct" (direct.go).
	Mode string `json:"mode"`

	// Jumps is the chain of jump hosts the source is reached through,
	// first hop first (TunnelSpec.Jumps). No client sends it: the service
	// fills it from a stored host's route (sourceHostId, or JumpsOf), and
	// JSON never does.
	Jumps []JumpHop `json:"-"`

	// sourceFrom and endpointFrom name the stored hosts that resolve
	// filled the source's and the endpoint's fields from
	// ("sourceHostId: host 7"), for messages; their ids are the hops'
	// HostID.
	sourceFrom, endpointFrom string
	sourceID, endpointID     int64
	// endpointRef names the endpoint in messages when an attempt resolves
	// a tunnelConnection's endpointHost (refs.go): `endpointHost "web"`
	// rather than endpointHostId; sourceRef names a forward's via host
	// (via.go) in place of sourceHostId. sourceItems is how many
	// tunnelConnections the source's host has (resolve), which tells an
	// attempt whether a host tunnel's item is still there.
	endpointRef, sourceRef string
	sourceItems            int
}

// JumpHop is one jump host of a tunnel's source, with its credentials, as
// a stored host gives them: checked as the source's fields are, and named
// in errors as jumps[i] (from 0, first hop first).
type JumpHop struct {
	IP          string
	SSHPort     int // 0 is 22
	Username    string
	AuthMethod  string // password or key; empty: key when SSHKey is set
	Password    string
	SSHKey      string
	KeyPassword string
	KeyType     string // empty is auto
	HostKey     string // a pin, as sourceHostKey; empty trusts the first key seen
	// HostID is the stored host the hop was read from (0: none), which
	// the tunnel's record keeps (TunnelHop.HostID).
	HostID int64
	// from names the stored host for messages, when resolve read it.
	from string
}

// JumpsOf returns the jump hops of a route of stored hosts, first hop
// first: hostchain.Reader.Route's answer for the source's host, so that
// filling a request's Jumps is one call.
func JumpsOf(route []*hostchain.Host) []JumpHop {
	if len(route) == 0 {
		return nil
	}
	out := make([]JumpHop, len(route))
	for i, r := range route {
		out[i] = JumpHop{
			IP: r.IP, SSHPort: r.Port, Username: r.Username, AuthMethod: string(r.AuthType),
			Password: r.Password, SSHKey: r.Key, KeyPassword: r.KeyPassword, KeyType: r.KeyType,
			HostID: r.ID,
		}
	}
	return out
}

func (j *JumpHop) input(i int) hopInput {
	in := hopInput{fmt.Sprintf("jumps[%d].", i), j.IP, j.Username, j.Password, j.AuthMethod,
		j.SSHKey, j.KeyPassword, j.HostKey, nil, nil, j.from, j.HostID}
	if j.SSHPort != 0 {
		in.port = &j.SSHPort
	}
	if j.KeyType != "" {
		in.keyType = &j.KeyType
	}
	return in
}

// hopInput is one hop's fields of a request, with the prefix that names
// them ("source", "endpoint").
type hopInput struct {
	prefix                            string
	ip, username, password, auth, key string
	keyPassword, hostKey              string
	port                              *int
	keyType                           *string
	// from names the stored host the fields were read from (resolve), and
	// hostID is its id. Its errors name the host's fields (ip, port,
	// authType…) after it: "sourceHostId: host 7: password is required
	// when authType is password". The pin (hostKey) is the request's
	// own whatever from says.
	from   string
	hostID int64
}

// hostFields are the names of a stored host's fields, by the names of a
// request's (after the prefix).
var hostFields = map[string]string{
	"IP": "ip", "SSHPort": "port", "Username": "username", "Password": "password",
	"AuthMethod": "authType", "SSHKey": "key", "KeyPassword": "keyPassword", "KeyType": "keyType",
}

// field names the hop's field: the request's ("sourceIP"), or the stored
// host's ("ip") when the hop was read from one.
func (in *hopInput) field(name string) string {
	if in.from != "" {
		return hostFields[name]
	}
	return in.prefix + name
}

// ipField names the hop's address for messages that stand alone: the
// request's field, or the stored host's after the host.
func (in *hopInput) ipField() string {
	if in.from != "" {
		return in.from + ": ip"
	}
	return in.field("IP")
}

// maxSecrets bounds the credentials of all of a tunnel's hops together, in
// bytes, which its record holds sealed: DynamoDB's items hold 400 KB. A
// request without jump hosts cannot reach it (two hops of at most 64 KiB,
// 4 KiB and 1 KiB each).
const maxSecrets = 256 << 10

// parse checks the request and returns the tunnel it asks for, with the
// defaults applied and a retryInterval below floor raised to it. Every
// error is Invalid (TooLarge for a key over the contract's 64 KiB or
// credentials over maxSecrets; LimitExceeded for more than maxJumps jump
// hosts) and names the field.
func (req *ConnectRequest) parse(floor time.Duration, maxJumps int) (name string, spec sshdeck.TunnelSpec, creds sshdeck.TunnelCredentials, err error) {
	if err = check.First(
		check.Text("name", req.Name, 1, MaxNameLen, false),
		check.Text("hostName", req.HostName, 0, sshdeck.MaxHostName, false),
	); err != nil {
		return
	}
	switch req.Name {
	case reservedName:
		err = check.Invalid("name %q is reserved: GET /ssh/tunnel/status/stream is the status stream", reservedName)
		return
	case ".", "..":
		// HTTP servers and clients remove dot segments from a path, even
		// escaped ones: GET /ssh/tunnel/status/.. could never name it.
		err = check.Invalid("name %q is reserved: no URL path can hold it", req.Name)
		return
	}
	mode, err := parseMode(req.Mode)
	if err != nil {
		return
	}
	spec = sshdeck.TunnelSpec{
		Mode:       mode,
		HostName:   req.HostName,
		MaxRetries: check.OrDefault(req.MaxRetries, sshdeck.DefaultTunnelRetries),
		AutoStart:  req.AutoStart,
		IsPinned:   req.IsPinned,
	}
	// Any smaller retryInterval is raised to the floor, as API.md says
	// (zero and negative ones too), but no larger one lowered: an hour is
	// the most. Checked before the product, which could overflow.
	interval := check.OrDefault(req.RetryInterval, defaultRetryInterval)
	if interval > maxRetryInterval {
		err = check.Invalid("retryInterval must be at most %d milliseconds (a value below %d is raised to it)", maxRetryInterval, MinRetryInterval)
		return
	}
	spec.RetryInterval = max(time.Duration(max(interval, 0))*time.Millisecond, floor)
	if req.SourcePort == nil || req.EndpointPort == nil {
		err = check.Invalid("sourcePort and endpointPort are required")
		return
	}
	spec.SourcePort, spec.EndpointPort = *req.SourcePort, *req.EndpointPort
	if err = check.First(
		check.Port("sourcePort", spec.SourcePort),
		check.Port("endpointPort", spec.EndpointPort),
		check.Between("maxRetries", spec.MaxRetries, 0, sshdeck.MaxTunnelRetries),
	); err != nil {
		return
	}
	if len(req.Jumps) > maxJumps {
		err = sshdeck.JumpHostsExceeded(maxJumps)
		return
	}
	if len(req.Jumps) > 0 {
		spec.Jumps = make([]sshdeck.TunnelHop, len(req.Jumps))
		creds.Jumps = make([]sshdeck.Credentials, len(req.Jumps))
	}
	for i := range req.Jumps {
		if spec.Jumps[i], creds.Jumps[i], err = req.Jumps[i].input(i).parse(); err != nil {
			return
		}
	}
	if spec.Source, creds.Source, err = req.source().parse(); err != nil {
		return
	}
	if spec.Endpoint, creds.Endpoint, err = req.endpoint().parse(); err != nil {
		return
	}
	if secretsSize(&creds) > maxSecrets {
		err = sshdeck.Errorf(sshdeck.TooLarge, "the credentials of the tunnel's %d hosts add up to over %d KiB", len(creds.Jumps)+2, maxSecrets>>10)
	}
	return req.Name, spec, creds, err
}

// parseMode checks a request's mode. Relay is stored as empty, as every
// tunnel before modes existed was, so that a relay tunnel's record is the
// same whether or not its request named the mode.
func parseMode(mode string) (sshdeck.TunnelMode, error) {
	switch sshdeck.TunnelMode(mode) {
	case "", sshdeck.TunnelRelay:
		return "", nil
	case sshdeck.TunnelDirect:
		return sshdeck.TunnelDirect, nil
	}
	return "", check.Invalid("mode must be relay or direct")
}

func secretsSize(c *sshdeck.TunnelCredentials) int {
	size := func(c *sshdeck.Credentials) int { return len(c.Password) + len(c.Key) + len(c.KeyPassword) }
	n := size(&c.Source) + size(&c.Endpoint)
	for i := range c.Jumps {
		n += size(&c.Jumps[i])
	}
	return n
}

func (req *ConnectRequest) source() hopInput {
	return hopInput{"source", req.SourceIP, req.SourceUsername, req.SourcePassword, req.SourceAuthMethod,
		req.SourceSSHKey, req.SourceKeyPassword, req.SourceHostKey, req.SourceSSHPort, req.SourceKeyType,
		req.sourceFrom, req.sourceID}
}

func (req *ConnectRequest) endpoint() hopInput {
	return hopInput{"endpoint", req.EndpointIP, req.EndpointUsername, req.EndpointPassword, req.EndpointAuthMethod,
		req.EndpointSSHKey, req.EndpointKeyPassword, req.EndpointHostKey, req.EndpointSSHPort, req.EndpointKeyType,
		req.endpointFrom, req.endpointID}
}

// parse checks the hop: its pin, named as the request's field, then the
// rest (fields).
func (in hopInput) parse() (sshdeck.TunnelHop, sshdeck.Credentials, error) {
	var pin string
	if in.hostKey != "" {
		name := in.prefix + "HostKey"
		if err := check.Limit(name, &in.hostKey, maxHostKeyPin); err != nil {
			return sshdeck.TunnelHop{}, sshdeck.Credentials{}, err
		}
		var err error
		if pin, err = ParsePin(in.hostKey); err != nil {
			return sshdeck.TunnelHop{}, sshdeck.Credentials{}, check.Invalid("%s %s", name, sshdeck.ErrorMessage(err))
		}
	}
	h, creds, err := in.fields()
	if err != nil && in.from != "" {
		err = sshdeck.Errorf(sshdeck.ErrorCode(err), "%s: %s", in.from, sshdeck.ErrorMessage(err))
	}
	h.HostKey, h.HostID = pin, in.hostID
	return h, creds, err
}

func (in *hopInput) fields() (sshdeck.TunnelHop, sshdeck.Credentials, error) {
	f := in.field
	h := sshdeck.TunnelHop{
		IP:       in.ip,
		SSHPort:  check.OrDefault(in.port, sshdeck.DefaultSSHPort),
		Username: in.username,
		Auth:     sshdeck.AuthType(in.auth),
		KeyType:  check.OrDefault(in.keyType, sshkey.Auto),
	}
	if h.Auth == "" {
		h.Auth = sshdeck.AuthPassword
		if in.key != "" {
			h.Auth = sshdeck.AuthKey
		}
	}
	if len(in.key) > sshdeck.MaxKeySize {
		return h, sshdeck.Credentials{}, sshdeck.Errorf(sshdeck.TooLarge, "%s is over %d KiB", f("SSHKey"), sshdeck.MaxKeySize>>10)
	}
	err := check.First(
		check.Address(f("IP"), h.IP),
		check.Port(f("SSHPort"), h.SSHPort),
		check.Text(f("Username"), h.Username, 1, sshdeck.MaxUsername, false),
		check.Limit(f("Password"), &in.password, sshdeck.MaxPassword),
		check.Plain(f("Password"), in.password, ""),
		check.Limit(f("KeyPassword"), &in.keyPassword, sshdeck.MaxKeyPassword),
		check.Plain(f("KeyPassword"), in.keyPassword, ""),
		// A key spans lines (PEM, OpenSSH): line ends and tabs pass.
		check.Plain(f("SSHKey"), in.key, "\r\n\t"),
	)
	if err != nil {
		return h, sshdeck.Credentials{}, err
	}
	// Checked whatever the method, as a host's keyType is: a password
	// method must not hide a typo that a later switch to key would meet.
	if !sshkey.ValidKeyType(h.KeyType) {
		return h, sshdeck.Credentials{}, check.Invalid("%s must be \"auto\" or an SSH key algorithm", f("KeyType"))
	}
	// Only the credentials the method uses are kept: a stored tunnel holds
	// no secret it does not need.
	switch h.Auth {
	case sshdeck.AuthPassword:
		if in.password == "" {
			return h, sshdeck.Credentials{}, check.Invalid("%s is required when %s is password", f("Password"), f("AuthMethod"))
		}
		h.KeyType = sshkey.Auto
		return h, sshdeck.Credentials{Password: in.password}, nil
	case sshdeck.AuthKey:
		if in.key == "" {
			return h, sshdeck.Credentials{}, check.Invalid("%s is required when %s is key", f("SSHKey"), f("AuthMethod"))
		}
		if _, err := sshkey.Parse(in.key, in.keyPassword, h.KeyType); err != nil {
			// sshkey names a host's fields; name this request's.
			msg := strings.NewReplacer("keyPassword", f("KeyPassword"), "keyType", f("KeyType")).Replace(sshdeck.ErrorMessage(err))
			return h, sshdeck.Credentials{}, check.Invalid("%s: %s", f("SSHKey"), msg)
		}
		return h, sshdeck.Credentials{Key: in.key, KeyPassword: in.keyPassword}, nil
	}
	return h, sshdeck.Credentials{}, check.Invalid("%s must be password or key", f("AuthMethod"))
}
