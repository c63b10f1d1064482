package sshdeck

import "time"

// Limits of the SSH fields that a host and a tunnel's hop share (API.md):
// a host's ip, port, username, password, key and keyPassword are a hop's
// IP, SSHPort, Username, Password, SSHKey and KeyPassword, held to the
// same limits wherever they come in (shared/hosts, shared/api, the tunnel
// service).
const (
	// MaxKeySize is the largest private key, in bytes: the contract's
	// key file limit, 64 KiB.
	MaxKeySize = 64 << 10
	// MaxHostName is the longest host address or host name, in
	// characters (a DNS name's 253).
	MaxHostName = 253
	// MaxUsername is the longest SSH user name, in characters.
	MaxUsername = 256
	// MaxPassword is the longest password, in bytes.
	MaxPassword = 4096
	// MaxKeyPassword is the longest private key passphrase, in bytes.
	MaxKeyPassword = 1024
	// DefaultSSHPort is the SSH port of a host that names none.
	DefaultSSHPort = 22
)

// Limits of a tunnel's retries, the same for a host's tunnel connections
// (intervals in seconds) and a tunnel service's connect request
// (intervals in milliseconds).
const (
	// DefaultTunnelRetries is how often a failed tunnel is retried when
	// its request does not say.
	DefaultTunnelRetries = 3
	// MaxTunnelRetries is the most retries a tunnel may ask for.
	MaxTunnelRetries = 1000
	// DefaultTunnelRetryInterval is the wait between retries when a
	// tunnel's request does not say.
	DefaultTunnelRetryInterval = 5 * time.Second
	// MaxTunnelRetryInterval is the longest wait between retries.
	MaxTunnelRetryInterval = time.Hour
)
