package sshconfig

// MaxInput is the largest config Parse reads, in bytes. A real
// ~/.ssh/config is a few KiB; an import is one request body.
const MaxInput = 1 << 20

// MaxLine is the longest line Parse reads, in bytes. OpenSSH has no limit;
// no line of a real config comes near it.
const MaxLine = 16 << 10

// Limits on the values of a Host. OpenSSH's own: 100 identity files per
// host (SSH_MAX_IDENTITY_FILES), a forward's two arguments fit in 255 bytes
// (readconf.c formats them into a 256-byte buffer and would cut the rest).
// sshdeck's: names and user names of at most maxName bytes, paths of at most
// maxPath (PATH_MAX), a ProxyJump line of at most maxJump; they keep every
// written line far below MaxLine, so that what Write writes Parse reads.
const (
	maxIdentityFiles = 100
	maxForwardSpec   = 255
	maxName          = 255
	maxPath          = 4096
	maxJump          = 2048
)

// Config is what Parse read from a config file.
type Config struct {
	// Hosts are the hosts of the file in the order their first Host line
	// appears. Two Host blocks for the same alias make one Host, as OpenSSH
	// applies both to it.
	Hosts []Host
	// Skipped lists, in line order, every line (or Match block) that is not
	// in Hosts, with the reason.
	Skipped []Skipped
}

// Host is one host of a config: the settings of the Host block(s) whose
// alias it is. Empty strings, 0 and nil mean "not set": OpenSSH then uses
// its default (HostName the alias, Port 22, User the local user, its
// default identity files).
type Host struct {
	// Alias is the name the user types (`ssh <alias>`): the first pattern of
	// its Host line that names a single host (no wildcard, no negation).
	Alias    string
	HostName string
	User     string
	Port     int
	// IdentityFiles are paths as written in the file (OpenSSH expands ~,
	// %-tokens and ${VAR} on the user's machine, when it connects); "none"
	// is OpenSSH's "no identity file". Duplicates are dropped, as OpenSSH
	// drops them.
	IdentityFiles []string
	// ProxyJump is the chain of hops to go through, first hop first.
	// []Jump{{Host: "none"}} is "ProxyJump none": explicitly no jump.
	ProxyJump      []Jump
	LocalForwards  []Forward
	RemoteForwards []Forward
	// Line is the line of the host's first Host line; Write ignores it.
	Line int
}

// Jump is one hop of a ProxyJump chain: [user@]host[:port]. Port 0 is
// unset (the hop's own config, or 22).
type Jump struct {
	User string
	Host string
	Port int
}

// Forward is a TCP port forward. For a LocalForward, BindAddress:BindPort
// listens on the user's machine and Host:HostPort is reached from the SSH
// server; for a RemoteForward, the server listens and the user's machine
// connects. BindAddress "" is OpenSSH's default (loopback unless
// GatewayPorts) and "*" every address (OpenSSH's empty bind address, as in
// ":8080", means the same: Parse reads it as "*"). A RemoteForward's
// BindPort may be 0: the server picks the port.
type Forward struct {
	BindAddress string
	BindPort    int
	Host        string
	HostPort    int
}

// Skipped is a line that Parse read but did not turn into a Host field.
type Skipped struct {
	Line int
	// Keyword is the line's keyword, spelled as OpenSSH's manual spells it
	// for the keywords sshdeck knows and as written otherwise.
	Keyword string
	// Host is the alias of the block the line is in, the patterns of its
	// Host line when that block names no single host, "" before the first
	// Host and in a Match block.
	Host   string
	Reason string
}
