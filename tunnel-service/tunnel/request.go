package tunnel

import (
	"strings"
	"time"

	"github.com/sshdeck/sshdeck/shared/check"
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
type ConnectRequest struct {
	Name     string `json:"name"`
	HostName string `json:"hostName"`

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
}

// hopInput is one hop's fields of a request, with the prefix that names
// them ("source", "endpoint").
type hopInput struct {
	prefix                            string
	ip, username, password, auth, key string
	keyPassword, hostKey              string
	port                              *int
	keyType                           *string
}

// parse checks the request and returns the tunnel it asks for, with the
// defaults applied and a retryInterval below floor raised to it. Every
// error is Invalid (TooLarge for a key over the contract's 64 KiB) and
// names the field.
func (req *ConnectRequest) parse(floor time.Duration) (name string, spec sshdeck.TunnelSpec, creds sshdeck.TunnelCredentials, err error) {
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
	spec = sshdeck.TunnelSpec{
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
	if spec.Source, creds.Source, err = req.source().parse(); err != nil {
		return
	}
	spec.Endpoint, creds.Endpoint, err = req.endpoint().parse()
	return req.Name, spec, creds, err
}

func (req *ConnectRequest) source() hopInput {
	return hopInput{"source", req.SourceIP, req.SourceUsername, req.SourcePassword, req.SourceAuthMethod,
		req.SourceSSHKey, req.SourceKeyPassword, req.SourceHostKey, req.SourceSSHPort, req.SourceKeyType}
}

func (req *ConnectRequest) endpoint() hopInput {
	return hopInput{"endpoint", req.EndpointIP, req.EndpointUsername, req.EndpointPassword, req.EndpointAuthMethod,
		req.EndpointSSHKey, req.EndpointKeyPassword, req.EndpointHostKey, req.EndpointSSHPort, req.EndpointKeyType}
}

func (in hopInput) parse() (sshdeck.TunnelHop, sshdeck.Credentials, error) {
	f := func(name string) string { return in.prefix + name }
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
		check.Limit(f("HostKey"), &in.hostKey, maxHostKeyPin),
	)
	if err != nil {
		return h, sshdeck.Credentials{}, err
	}
	// Checked whatever the method, as a host's keyType is: a password
	// method must not hide a typo that a later switch to key would meet.
	if !sshkey.ValidKeyType(h.KeyType) {
		return h, sshdeck.Credentials{}, check.Invalid("%s must be \"auto\" or an SSH key algorithm", f("KeyType"))
	}
	if in.hostKey != "" {
		if h.HostKey, err = ParsePin(in.hostKey); err != nil {
			return h, sshdeck.Credentials{}, check.Invalid("%s %s", f("HostKey"), sshdeck.ErrorMessage(err))
		}
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
