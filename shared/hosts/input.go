package hosts

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/sshkey"
)

// Limits of host fields. MaxKeySize is the contract's key file limit.
const (
	MaxKeySize         = 64 << 10
	maxName            = 128
	maxHostName        = 253
	maxUsername        = 256
	maxFolder          = 256
	maxPath            = 4096
	maxPassword        = 4096
	maxKeyPassword     = 1024
	maxTags            = 32
	maxTagLen          = 64
	maxTunnels         = 64
	maxTunnelRetries   = 1000
	maxTunnelInterval  = 3600 // seconds
	defaultPort        = 22
	defaultMaxRetries  = 3
	defaultRetryPeriod = 5 // seconds
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
	Password          *string       `json:"password"`
	Key               *string       `json:"key"`
	KeyPassword       *string       `json:"keyPassword"`
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

// config checks the input's fields on their own and returns the
// configuration they describe, with defaults applied. authType stays empty
// when absent: it is inferred once the credentials are known.
func (in *Input) config() (sshdeck.HostConfig, error) {
	c := sshdeck.HostConfig{
		Name:              in.Name,
		IP:                in.IP,
		Port:              orDefault(in.Port, defaultPort),
		Username:          in.Username,
		Folder:            in.Folder,
		Tags:              in.Tags,
		Pin:               in.Pin,
		AuthType:          sshdeck.AuthType(orDefault(in.AuthType, "")),
		KeyType:           orDefault(in.KeyType, sshkey.Auto),
		EnableTerminal:    orDefault(in.EnableTerminal, true),
		EnableTunnel:      orDefault(in.EnableTunnel, true),
		EnableFileManager: orDefault(in.EnableFileManager, true),
		DefaultPath:       in.DefaultPath,
		TunnelConnections: []sshdeck.TunnelConnection{},
	}
	if c.Tags == nil {
		c.Tags = []string{}
	}
	if c.DefaultPath == "" {
		c.DefaultPath = "/"
	}
	checks := []error{
		text("name", c.Name, 0, maxName, false),
		text("ip", c.IP, 1, maxHostName, true),
		port("port", c.Port),
		text("username", c.Username, 1, maxUsername, true),
		text("folder", c.Folder, 0, maxFolder, false),
		text("defaultPath", c.DefaultPath, 1, maxPath, false),
		limit("password", in.Password, maxPassword),
		limit("keyPassword", in.KeyPassword, maxKeyPassword),
	}
	switch c.AuthType {
	case "", sshdeck.AuthPassword, sshdeck.AuthKey, sshdeck.AuthNone:
	default:
		checks = append(checks, invalid("authType must be password, key or none"))
	}
	if !sshkey.ValidKeyType(c.KeyType) {
		checks = append(checks, invalid("keyType %q is not \"auto\" or an SSH key algorithm", c.KeyType))
	}
	if in.Key != nil && len(*in.Key) > MaxKeySize {
		checks = append(checks, sshdeck.Errorf(sshdeck.TooLarge, "key is over %d KiB", MaxKeySize>>10))
	}
	if len(c.Tags) > maxTags {
		checks = append(checks, invalid("tags has %d items; at most %d are allowed", len(c.Tags), maxTags))
	}
	for i, tag := range c.Tags {
		checks = append(checks, text(fmt.Sprintf("tags[%d]", i), tag, 1, maxTagLen, false))
	}
	if len(in.TunnelConnections) > maxTunnels {
		checks = append(checks, invalid("tunnelConnections has %d items; at most %d are allowed", len(in.TunnelConnections), maxTunnels))
	}
	for i, t := range in.TunnelConnections {
		tc, err := t.connection(fmt.Sprintf("tunnelConnections[%d]", i))
		checks = append(checks, err)
		c.TunnelConnections = append(c.TunnelConnections, tc)
	}
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
		MaxRetries:    orDefault(t.MaxRetries, defaultMaxRetries),
		RetryInterval: orDefault(t.RetryInterval, defaultRetryPeriod),
		AutoStart:     t.AutoStart,
	}
	for _, err := range []error{
		port(field+".sourcePort", tc.SourcePort),
		port(field+".endpointPort", tc.EndpointPort),
		text(field+".endpointHost", tc.EndpointHost, 1, maxHostName, true),
		between(field+".maxRetries", tc.MaxRetries, 0, maxTunnelRetries),
		between(field+".retryInterval", tc.RetryInterval, 1, maxTunnelInterval),
	} {
		if err != nil {
			return tc, err
		}
	}
	return tc, nil
}

func orDefault[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func invalid(format string, args ...any) error {
	return sshdeck.Errorf(sshdeck.Invalid, format, args...)
}

func port(field string, p int) error {
	if p < 1 || p > 65535 {
		return invalid("%s must be an integer from 1 to 65535", field)
	}
	return nil
}

func between(field string, v, lo, hi int) error {
	if v < lo || v > hi {
		return invalid("%s must be an integer from %d to %d", field, lo, hi)
	}
	return nil
}

func limit(field string, s *string, max int) error {
	if s != nil && len(*s) > max {
		return invalid("%s is longer than %d bytes", field, max)
	}
	return nil
}

// text checks a string's length in characters and that it holds no control
// characters (nor, with noSpace, white space).
func text(field, s string, min, max int, noSpace bool) error {
	n := len([]rune(s))
	switch {
	case n < min && min == 1:
		return invalid("%s is required", field)
	case n > max:
		return invalid("%s is longer than %d characters", field, max)
	}
	if i := strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsControl(r) || noSpace && unicode.IsSpace(r)
	}); i >= 0 {
		if noSpace {
			return invalid("%s must not contain white space or control characters", field)
		}
		return invalid("%s must not contain control characters", field)
	}
	return nil
}
