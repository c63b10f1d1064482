package sshconfig

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Parse reads an OpenSSH client config. Its error is an *sshdeck.Error:
// Invalid naming the line and keyword of the first line that does not
// parse, TooLarge for input over MaxInput (or whose Host patterns would
// take too long to match); or the reader's error.
//
// Each Host block that names a host (see Host.Alias) gives that host its
// identity files and forwards, and the value OpenSSH uses of each
// single-valued keyword: the first it reads for the host, in this block,
// another block of the same alias, or an earlier block that applies to the
// host too (a keyword before the first Host line, a wildcard block, another
// host's block with more patterns). A value of the host's own that OpenSSH
// does not use is not imported and is reported with the line OpenSSH uses.
// So every value Parse sets is the one `ssh -G` shows for the host, Match
// blocks (not evaluated) and Include (not followed) aside; a value it
// leaves unset may come from a block it reports.
//
// Everything else is reported in Skipped: keywords sshdeck does not
// import, keywords before the first Host line, Host blocks that name no
// single host (wildcards, negations) with their keywords, Match blocks (one
// report each), Include, the other patterns of a Host line, and the forms
// of forwards sshdeck does not support. Lines that are not imported are
// still checked as OpenSSH checks them (quotes, arguments, ports, forwards,
// jumps), since ssh refuses the whole file for a bad one.
func Parse(r io.Reader) (*Config, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxInput {
		return nil, sshdeck.Errorf(sshdeck.TooLarge, "ssh_config is over %d bytes", MaxInput)
	}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return nil, sshdeck.Errorf(sshdeck.Invalid, "line 1: starts with a byte order mark, which OpenSSH reads as part of the keyword")
	}
	p := parser{
		hosts:    map[string]*hostState{},
		m:        matcher{left: maxMatchSteps},
		setters:  map[string][]setter{},
		blockSet: map[string]bool{},
	}
	for i, line := range strings.Split(string(data), "\n") {
		if err := p.line(i+1, line); err != nil {
			return nil, err
		}
	}
	c := p.finish()
	if p.m.spent() {
		return nil, sshdeck.Errorf(sshdeck.TooLarge, "ssh_config has too many Host patterns and hosts to match against each other")
	}
	return c, nil
}

// canonical spells the keywords sshdeck knows as OpenSSH's manual does.
// IdentityFile2 is OpenSSH's old alias of IdentityFile.
var canonical = map[string]string{
	"host":          "Host",
	"match":         "Match",
	"include":       "Include",
	"hostname":      "HostName",
	"user":          "User",
	"port":          "Port",
	"identityfile":  "IdentityFile",
	"identityfile2": "IdentityFile",
	"proxyjump":     "ProxyJump",
	"proxycommand":  "ProxyCommand",
	"localforward":  "LocalForward",
	"remoteforward": "RemoteForward",
}

// block is the kind of block a line belongs to.
type block int

const (
	preamble block = iota // before the first Host or Match
	aliased               // a Host block that names a host
	unnamed               // a Host block that names no single host
	match                 // a Match block
)

// hostState is a Host being read, with what the first-value rule needs.
type hostState struct {
	Host
	// first is, for each slot, the line whose value OpenSSH uses for the
	// host: one of its own, or of an earlier block that applies to it too.
	first map[string]lineRef
	// forwards holds the forwards read, to drop duplicates as OpenSSH does.
	forwards map[forwardKey]bool
}

// lineRef names a line by number and keyword.
type lineRef struct {
	line    int
	keyword string
}

// slots are the single-valued settings sshdeck imports, by keyword: for
// each, OpenSSH keeps the first value it reads for a host. ProxyJump and
// ProxyCommand share one: whichever comes first wins, the other is
// ignored.
var slots = map[string]string{
	"hostname":     "HostName",
	"user":         "User",
	"port":         "Port",
	"proxyjump":    "ProxyJump",
	"proxycommand": "ProxyJump",
}

// setter is the first line of a block that sets a slot, kept when the
// block applies to more than the host it names (or to none): such a line
// comes first for every host it applies to that is read later.
type setter struct {
	lineRef
	every    bool     // before the first Host line: applies to every host
	patterns []string // else the patterns of its Host line
	owner    string   // the alias of its block, "" if none
}

type forwardKey struct {
	Forward
	remote bool
}

// hostLine is a Host line whose block reaches further than its alias:
// finish names the other hosts it applies to in its report.
type hostLine struct {
	patterns []string
	alias    string
	skipped  int // index of its report in Skipped
}

type parser struct {
	cfg   Config
	hosts map[string]*hostState
	order []*hostState
	m     matcher

	block       block
	cur         *hostState // aliased
	patterns    []string   // aliased, unnamed: the Host line's patterns
	joined      string     // unnamed: the patterns as the reports show them
	blockReason string     // unnamed: the report of its lines

	// setters are, by slot and in line order, the lines that may come
	// first for hosts read after them; blockSet the slots the current
	// block has set.
	setters  map[string][]setter
	blockSet map[string]bool

	reaching []hostLine

	matchSkipped int // match: index of its report
	matchStart   int
	lastContent  int // the last line that was not blank
}

// invalid is the error for a line that does not parse. A keyword that is
// long or holds odd bytes is quoted and shortened.
func invalid(num int, keyword, problem string) error {
	if keyword == "" {
		return sshdeck.Errorf(sshdeck.Invalid, "line %d: %s", num, problem)
	}
	if len(keyword) > 64 || strings.ContainsFunc(keyword, func(r rune) bool { return r <= ' ' || r > '~' }) {
		keyword = quote(keyword)
	}
	return sshdeck.Errorf(sshdeck.Invalid, "line %d: %s: %s", num, keyword, problem)
}

func (p *parser) skip(num int, keyword, host, reason string) {
	p.cfg.Skipped = append(p.cfg.Skipped, Skipped{Line: num, Keyword: keyword, Host: host, Reason: reason})
}

func (p *parser) line(num int, s string) error {
	if len(s) > MaxLine {
		return invalid(num, "", "longer than "+strconv.Itoa(MaxLine)+" bytes")
	}
	l, blank, problem := lexLine(s)
	if blank {
		return nil
	}
	name := canonical[l.lower]
	if name == "" {
		name = l.keyword
	}
	if problem != "" {
		return invalid(num, name, problem)
	}
	switch l.lower {
	case "host":
		p.closeMatch()
		p.lastContent = num
		clear(p.blockSet)
		return p.host(num, l.args)
	case "match":
		p.closeMatch()
		p.lastContent = num
		clear(p.blockSet)
		p.block, p.matchStart, p.matchSkipped = match, num, len(p.cfg.Skipped)
		p.skip(num, "Match", "", "")
		return nil
	}
	p.lastContent = num
	if p.block == aliased {
		return p.apply(num, name, l)
	}
	// Not imported: checked as OpenSSH would check it, then reported
	// (lines of a Match block are in its one report).
	if err := p.check(num, name, l); err != nil {
		return err
	}
	var host, reason string
	switch {
	case p.block == match:
		return nil
	case l.lower == "include":
		reason = reasonInclude
	case p.block == preamble:
		reason = "before the first Host line: OpenSSH applies it to every host; not imported"
	default:
		host, reason = p.joined, p.blockReason
	}
	p.record(num, name, l.lower)
	p.skip(num, name, host, reason)
	return nil
}

const reasonInclude = "Include is not followed: an import reads one file"

// host starts the block of a Host line.
func (p *parser) host(num int, patterns []string) error {
	for _, pat := range patterns {
		if pat == "" {
			return invalid(num, "Host", "empty pattern")
		}
	}
	// The alias is the first pattern that names one host the block
	// applies to (a negated pattern may exclude it).
	alias := ""
	for _, pat := range patterns {
		if isAlias(pat) && p.m.applies(patterns, pat) {
			alias = pat
			break
		}
	}
	joined := strings.Join(patterns, " ")
	p.patterns = patterns
	if alias == "" {
		p.block, p.cur, p.joined = unnamed, nil, joined
		p.blockReason = fmt.Sprintf("in the Host block of line %d, which names no single host: not imported", num)
		p.reaching = append(p.reaching, hostLine{patterns: patterns, skipped: len(p.cfg.Skipped)})
		p.skip(num, "Host", joined, "")
		return nil
	}
	p.block = aliased
	h := p.hosts[alias]
	if h == nil {
		h = &hostState{Host: Host{Alias: alias, Line: num}, first: map[string]lineRef{}, forwards: map[forwardKey]bool{}}
		p.hosts[alias] = h
		p.order = append(p.order, h)
	}
	p.cur = h
	var others []string
	for _, pat := range patterns {
		if pat != alias {
			others = append(others, pat)
		}
	}
	if len(others) > 0 {
		p.reaching = append(p.reaching, hostLine{patterns: patterns, alias: alias, skipped: len(p.cfg.Skipped)})
		p.skip(num, "Host", alias, "patterns other than the alias are not imported: "+strings.Join(others, " "))
	}
	return nil
}

// closeMatch ends an open Match block: its report says which lines it
// covered.
func (p *parser) closeMatch() {
	if p.block != match {
		return
	}
	lines := "line " + strconv.Itoa(p.matchStart)
	if p.lastContent > p.matchStart {
		lines = fmt.Sprintf("lines %d-%d", p.matchStart, p.lastContent)
	}
	p.cfg.Skipped[p.matchSkipped].Reason = "Match block (" + lines + ") not imported: sshdeck does not evaluate Match conditions"
	p.block = preamble // until the Host or Match line that closed it sets its own
}

// maxAlso is how many hosts the report of a Host line names as reached
// by its block, the others counted.
const maxAlso = 10

// finish closes the last block and completes the reports of Host lines
// with the imported hosts OpenSSH applies their blocks to as well.
func (p *parser) finish() *Config {
	p.closeMatch()
	for _, hl := range p.reaching {
		if p.m.spent() {
			break // Parse fails
		}
		var also []string
		more := 0
		for _, h := range p.order {
			if h.Alias != hl.alias && p.m.applies(hl.patterns, h.Alias) {
				if len(also) < maxAlso {
					also = append(also, h.Alias)
				} else {
					more++
				}
			}
		}
		s := &p.cfg.Skipped[hl.skipped]
		if hl.alias == "" {
			s.Reason = "names no single host: not imported"
		}
		if len(also) > 0 {
			s.Reason += "; OpenSSH also applies this block to " + strings.Join(also, ", ")
		}
		if more > 0 {
			s.Reason += fmt.Sprintf(" and %d more", more)
		}
	}
	for _, h := range p.order {
		p.cfg.Hosts = append(p.cfg.Hosts, h.Host)
	}
	return &p.cfg
}

// oneArg is the single argument of a keyword that takes one.
func oneArg(l lexed) (string, string) {
	switch {
	case len(l.args) == 0 || l.args[0] == "":
		return "", "missing argument"
	case len(l.args) > 1:
		return "", "extra arguments at end of line"
	}
	return l.args[0], ""
}

// check checks a line of a block sshdeck does not import as OpenSSH checks
// it: the arguments of the keywords sshdeck knows (OpenSSH rejects the
// whole file for a bad one, active or not). Other keywords were only split.
func (p *parser) check(num int, name string, l lexed) error {
	var problem string
	switch l.lower {
	case "hostname", "user", "identityfile", "identityfile2":
		_, problem = oneArg(l)
	case "port":
		problem = checkPort(l)
	case "proxyjump":
		problem = checkJumpSyntax(l.rest)
	case "localforward", "remoteforward":
		_, _, problem = parseForwardLine(l.args, l.lower == "remoteforward", false)
	case "include":
		for _, a := range l.args {
			if a == "" {
				problem = "empty argument"
			}
		}
	}
	if problem != "" {
		return invalid(num, name, problem)
	}
	return nil
}

func checkPort(l lexed) string {
	v, problem := oneArg(l)
	if problem != "" {
		return problem
	}
	if n, ok := portNumber(v); !ok || n == 0 {
		return quote(v) + " is not a port number from 1 to 65535"
	}
	return ""
}

// checkJumpSyntax checks a ProxyJump of a block that is not imported:
// OpenSSH takes it raw and rejects what its hops do not parse.
func checkJumpSyntax(raw string) string {
	v, _, _ := strings.Cut(raw, "#")
	v = strings.TrimRight(v, " \t\r\n\v\f")
	if v == "" {
		return "missing argument"
	}
	if strings.EqualFold(v, "none") {
		return ""
	}
	// Only the part every OpenSSH reads (up to a space) is checked here.
	if i := strings.IndexAny(v, " \t"); i >= 0 {
		v = v[:i]
	}
	for _, s := range strings.Split(v, ",") {
		if _, problem := parseHop(s); problem != "" {
			return problem
		}
	}
	return ""
}

// record keeps the line as a setter of its slot if it is the first of its
// block and the block may apply to hosts read later: before the first
// Host, or a Host block with more patterns than its alias. Match blocks
// are not evaluated.
func (p *parser) record(num int, name, lower string) {
	slot := slots[lower]
	if slot == "" || p.block == match || p.blockSet[slot] {
		return
	}
	p.blockSet[slot] = true
	s := setter{lineRef: lineRef{num, name}, every: p.block == preamble}
	if p.block == aliased {
		if len(p.patterns) == 1 {
			return // applies to its alias alone
		}
		s.owner = p.cur.Alias
	}
	if !s.every {
		s.patterns = p.patterns
	}
	p.setters[slot] = append(p.setters[slot], s)
}

// claim finds the line whose value OpenSSH uses for the slot of h, if
// there is one yet: the first of h's own, or an earlier line of another
// block that applies to h. Otherwise the line num (keyword name) is it,
// and claimed is true.
func (p *parser) claim(h *hostState, num int, name, slot string) (first lineRef, claimed bool) {
	if f, ok := h.first[slot]; ok {
		return f, false
	}
	for _, s := range p.setters[slot] {
		if s.owner != h.Alias && (s.every || p.m.applies(s.patterns, h.Alias)) {
			h.first[slot] = s.lineRef
			return s.lineRef, false
		}
	}
	h.first[slot] = lineRef{num, name}
	return h.first[slot], true
}

// apply reads a line of a Host block that names a host.
func (p *parser) apply(num int, name string, l lexed) error {
	h := p.cur
	p.record(num, name, l.lower)
	fail := func(problem string) error { return invalid(num, name, problem) }
	// firstValue reports whether this line's value is the one OpenSSH
	// uses for the host; if not, the line is reported with the one that
	// is.
	firstValue := func() bool {
		first, ok := p.claim(h, num, name, slots[l.lower])
		if !ok {
			p.skip(num, name, h.Alias, fmt.Sprintf("OpenSSH uses the %s of line %d for this host: not imported", first.keyword, first.line))
		}
		return ok
	}
	switch l.lower {
	case "hostname":
		v, problem := oneArg(l)
		if problem != "" {
			return fail(problem)
		}
		expanded, ok := expandHostName(v, h.Alias)
		if !ok {
			return fail(quote(v) + ": OpenSSH expands only %h and %% in a HostName")
		}
		if !validName(expanded) {
			return fail(quote(expanded) + " is not a host name or address")
		}
		if firstValue() {
			h.HostName = expanded
		}
	case "user":
		v, problem := oneArg(l)
		if problem != "" {
			return fail(problem)
		}
		if !validUser(v) {
			return fail(quote(v) + " is not a user name sshdeck can store (no spaces, quotes, %, $ or shell characters)")
		}
		if firstValue() {
			h.User = v
		}
	case "port":
		if problem := checkPort(l); problem != "" {
			return fail(problem)
		}
		if firstValue() {
			h.Port, _ = portNumber(l.args[0])
		}
	case "identityfile", "identityfile2":
		v, problem := oneArg(l)
		if problem != "" {
			return fail(problem)
		}
		if !validPath(v) {
			return fail(quote(v) + " is not a path sshdeck can store")
		}
		for _, f := range h.IdentityFiles {
			if f == v {
				return nil // OpenSSH drops duplicates
			}
		}
		if len(h.IdentityFiles) == maxIdentityFiles {
			return fail("more than " + strconv.Itoa(maxIdentityFiles) + " identity files for " + quote(h.Alias) + " (OpenSSH's limit)")
		}
		h.IdentityFiles = append(h.IdentityFiles, v)
	case "proxycommand":
		// Unsupported, but it takes ProxyJump's slot when it comes first.
		p.claim(h, num, name, "ProxyJump")
		p.skip(num, name, h.Alias, reasonUnsupported)
	case "proxyjump":
		hops, problem := parseProxyJump(l.rest)
		if problem == "" {
			_, problem = checkJumps(hops)
		}
		if problem != "" {
			return fail(problem)
		}
		if firstValue() {
			h.ProxyJump = hops
		}
	case "localforward", "remoteforward":
		remote := l.lower == "remoteforward"
		f, kind, problem := parseForwardLine(l.args, remote, true)
		if problem != "" {
			return fail(problem)
		}
		switch kind {
		case fwdSocket:
			p.skip(num, name, h.Alias, "forwards of Unix-domain sockets are not supported: not imported")
		case fwdDynamic:
			p.skip(num, name, h.Alias, "a dynamic (SOCKS) RemoteForward is not supported: not imported")
		case fwdEnv:
			p.skip(num, name, h.Alias, "${...} in a forward is expanded from the user's environment: not imported")
		case fwdTCP:
			key := forwardKey{f, remote}
			if h.forwards[key] {
				return nil // OpenSSH drops duplicates
			}
			h.forwards[key] = true
			if remote {
				h.RemoteForwards = append(h.RemoteForwards, f)
			} else {
				h.LocalForwards = append(h.LocalForwards, f)
			}
		}
	case "include":
		if err := p.check(num, name, l); err != nil {
			return err
		}
		p.skip(num, name, h.Alias, reasonInclude)
	default:
		p.skip(num, name, h.Alias, reasonUnsupported)
	}
	return nil
}

const reasonUnsupported = "unsupported keyword: not imported"
