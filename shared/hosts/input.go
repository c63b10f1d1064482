package hosts

import (
	"fmt"
	"time"

	"github.com/sshdeck/sshdeck/shared/check"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/sshkey"
)

// Limits of host fields besides the SSH fields', which are sshdeck's
// (limits.go): a tunnel's hop is held to the same.
const (
	maxName    = 128
	maxFolder  = 256
	maxPath    = 4096
	maxTags    = 32
	maxTagLen  = 64
	maxTunnels = 64
	// A tunnel connection's retryInterval is in seconds.
	maxTunnelInterval  = int(sshdeck.MaxTunnelRetryInterval / time.Second)
	defaultRetryPeriod = int(sshdeck.DefaultTunnelRetryInterval / time.Second)
)

// Input is a host as a client sends it. Pointer fields tell "absent or null"
// (nil) from a value: absent credentials keep their stored values, other
// absent fields take their defaults (a PUT replaces the configuration).
type Input struct {
	Name              string        `json:"name"`
	IP                string        `json:"ip"`
	Port              *int          `json:"port"`
	Username          string        `json:"username"`
	Folder            string        `json:"folder"`
	Tags              []string      `json:"tags"`
	Pin               bool          `json:"pin"`
	AuthType          *string       `json:"authType"`
	KeyType           *string       `json:"keyType"`
	EnableTerminal    *bool         `json:"enableTerminal"`
	EnableTunnel      *bool         `json:"enableTunnel"`
	EnableFileManager *bool         `json:"enableFileManager"`
	DefaultPath       string        `json:"defaultPath"`
	TunnelConnections []TunnelInput `json:"tunnelConnections"`
	// JumpHosts are checked here on their own (positive, no duplicates),
	// and against the store by the service (chain.go).
	JumpHosts []sshdeck.JumpHost `json:"jumpHosts"`
	// IdentityFile is a path on the user's machine (ssh_config's), kept
	// as written: sshdeck never reads it.
	IdentityFile string  `json:"identityFile"`
	Password     *string `json:"password"`
	Key          *string `json:"key"`
	KeyPassword  *string `json:"keyPassword"`
}

// TunnelInput is a tunnel connection as a client sends it.
type TunnelInput struct {
	SourcePort    int    `json:"sourcePort"`
	EndpointPort  int    `json:"endpointPort"`
	EndpointHost  string `json:"endpointHost"`
	MaxRetries    *int   `json:"maxRetries"`
	RetryInterval *int   `json:"retryInterval"`
	AutoStart     bool   `json:"autoStart"`
}

// Validate checks the input's fields on their own, as Create and Update
// do before they read the store.
func (in *Input) Validate() error {
	_, err := in.config()
	return err
}

// config checks the input's fields on their own and returns the
// configuration they describe, with defaults applied. authType stays empty
// when absent: it is inferred once the credentials are known.
func (in *Input) config() (sshdeck.HostConfig, error) {
	c := sshdeck.HostConfig{
		Name:              in.Name,
		IP:                in.IP,
		Port:              check.OrDefault(in.Port, sshdeck.DefaultSSHPort),
		Username:          in.Username,
		Folder:            in.Folder,
		Tags:              in.Tags,
		Pin:               in.Pin,
		AuthType:          sshdeck.AuthType(check.OrDefault(in.AuthType, "")),
		KeyType:           check.OrDefault(in.KeyType, sshkey.Auto),
		EnableTerminal:    check.OrDefault(in.EnableTerminal, true),
		EnableTunnel:      check.OrDefault(in.EnableTunnel, true),
		EnableFileManager: check.OrDefault(in.EnableFileManager, true),
		DefaultPath:       in.DefaultPath,
		TunnelConnections: []sshdeck.TunnelConnection{},
		JumpHosts:         in.JumpHosts,
		IdentityFile:      in.IdentityFile,
	}
	if c.JumpHosts == nil {
		c.JumpHosts = []sshdeck.JumpHost{}
	}
	if c.Tags == nil {
		c.Tags = []string{}
	}
	if c.DefaultPath == "" {
		c.DefaultPath = "/"
	}
	checks := []error{
		check.Text("name", c.Name, 0, maxName, false),
		check.Address("ip", c.IP),
		check.Port("port", c.Port),
		check.Text("username", c.Username, 1, sshdeck.MaxUsername, true),
		check.Text("folder", c.Folder, 0, maxFolder, false),
		check.Text("defaultPath", c.DefaultPath, 1, maxPath, false),
		check.Limit("identityFile", &c.IdentityFile, maxPath),
		check.Plain("identityFile", c.IdentityFile, ""),
		check.Limit("password", in.Password, sshdeck.MaxPassword),
		check.PlainPtr("password", in.Password, ""),
		check.Limit("keyPassword", in.KeyPassword, sshdeck.MaxKeyPassword),
		check.PlainPtr("keyPassword", in.KeyPassword, ""),
		// A key spans lines (PEM, OpenSSH): line ends and tabs pass.
		check.PlainPtr("key", in.Key, "\r\n\t"),
	}
	switch c.AuthType {
	case "", sshdeck.AuthPassword, sshdeck.AuthKey, sshdeck.AuthNone:
	default:
		checks = append(checks, check.Invalid("authType must be password, key or none"))
	}
	if !sshkey.ValidKeyType(c.KeyType) {
		checks = append(checks, check.Invalid("keyType %q is not \"auto\" or an SSH key algorithm", c.KeyType))
	}
	if in.Key != nil && len(*in.Key) > sshdeck.MaxKeySize {
		checks = append(checks, sshdeck.Errorf(sshdeck.TooLarge, "key is over %d KiB", sshdeck.MaxKeySize>>10))
	}
	if len(c.Tags) > maxTags {
		checks = append(checks, check.Invalid("tags has %d items; at most %d are allowed", len(c.Tags), maxTags))
	}
	for i, tag := range c.Tags {
		checks = append(checks, check.Text(fmt.Sprintf("tags[%d]", i), tag, 1, maxTagLen, false))
	}
	if len(in.TunnelConnections) > maxTunnels {
		checks = append(checks, check.Invalid("tunnelConnections has %d items; at most %d are allowed", len(in.TunnelConnections), maxTunnels))
	}
	for i, t := range in.TunnelConnections {
		tc, err := t.connection(fmt.Sprintf("tunnelConnections[%d]", i))
		checks = append(checks, err)
		c.TunnelConnections = append(c.TunnelConnections, tc)
	}
	checks = append(checks, checkHops(c.JumpHosts))
	for _, err := range checks {
		if err != nil {
			return sshdeck.HostConfig{}, err
		}
	}
	return c, nil
}

func (t *TunnelInput) connection(field string) (sshdeck.TunnelConnection, error) {
	tc := sshdeck.TunnelConnection{
		SourcePort:    t.SourcePort,
		EndpointPort:  t.EndpointPort,
		EndpointHost:  t.EndpointHost,
		MaxRetries:    check.OrDefault(t.MaxRetries, sshdeck.DefaultTunnelRetries),
		RetryInterval: check.OrDefault(t.RetryInterval, defaultRetryPeriod),
		AutoStart:     t.AutoStart,
	}
	for _, err := range []error{
		check.Port(field+".sourcePort", tc.SourcePort),
		check.Port(field+".endpointPort", tc.EndpointPort),
		check.HostRef(field+".endpointHost", tc.EndpointHost),
		check.Between(field+".maxRetries", tc.MaxRetries, 0, sshdeck.MaxTunnelRetries),
		check.Between(field+".retryInterval", tc.RetryInterval, 1, maxTunnelInterval),
	} {
		if err != nil {
			return tc, err
		}
	}
	return tc, nil
}

// checkHops checks a list of jump hosts on its own: positive ids, each
// once. A host twice in one chain is a mistake, never a route. How many
// there may be is the service's limit (config.Limits.JumpHosts), checked
// with the store; a map keeps this linear however long the list.
func checkHops(hops []sshdeck.JumpHost) error {
	seen := make(map[int64]int, len(hops))
	for i, hop := range hops {
		if hop.HostID < 1 {
			return check.Invalid("jumpHosts[%d].hostId must be a positive host id", i)
		}
		if j, dup := seen[hop.HostID]; dup {
			return check.Invalid("jumpHosts[%d]: host %d is jumpHosts[%d] already; a chain passes each host once", i, hop.HostID, j)
		}
		seen[hop.HostID] = i
	}
	return nil
}
