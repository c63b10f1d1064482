// Package sshconfig reads and writes the part of an OpenSSH client
// configuration (ssh_config(5), ~/.ssh/config) that sshdeck imports hosts
// from and exports them to: Host blocks with HostName, User, Port,
// IdentityFile, ProxyJump, LocalForward and RemoteForward.
//
// OpenSSH is the judge. A config means what ssh(1) makes of it, not what it
// looks like, so Parse splits lines as OpenSSH does (its argv_split: double
// and single quotes, backslash escapes, a comment at the start of a token,
// "Keyword=value"), keeps the first value of a keyword as OpenSSH does, and
// reads forwards and jump chains with OpenSSH's grammar; and Write quotes
// and escapes so that OpenSSH reads back the values it was given. The tests
// hold both to what `ssh -G -F <file> <alias>` prints.
//
// What an import cannot carry is never dropped silently: every line Parse
// does not turn into a Host field is in Config.Skipped with its line and a
// reason (unsupported keywords, Include, Match blocks, wildcard Host
// blocks, keywords before the first Host, the second value of a keyword
// OpenSSH ignores). A line that does not parse is an error naming its line,
// and then nothing is returned: an import is all or nothing.
//
// Where OpenSSH would accept a value that sshdeck cannot store or write back
// unambiguously (a service name for a port, a host name with shell
// characters, a ProxyJump with a trailing comment that OpenSSH versions read
// differently), Parse refuses it rather than guess: whatever it accepts,
// Write writes and Parse reads back equal.
//
// The package is standard library only (and shared/sshdeck for its error
// codes) so that the API and the CLI can both use it cheaply.
package sshconfig
