package sshconfig

import (
	"strings"
)

// OpenSSH splits a config line in two steps (readconf.c,
// process_config_line_depth): strdelim takes the keyword, delimited by
// whitespace, a double quote or one '='; then argv_split splits the rest
// into arguments. The functions here are those two, byte for byte, because
// any difference would let a file mean one thing to sshdeck and another to
// ssh.

// whitespace is OpenSSH's WHITESPACE, which delimits the keyword.
const whitespace = " \t\r\n"

// lexed is one config line as OpenSSH splits it.
type lexed struct {
	// keyword is as written; lower is what OpenSSH looks up.
	keyword, lower string
	// rest is the line after the keyword and its separator: ProxyJump reads
	// it whole instead of args.
	rest string
	args []string
}

// lexLine splits one line. blank is true for a line OpenSSH ignores (empty,
// whitespace, a comment); problem is why OpenSSH would reject it.
func lexLine(s string) (l lexed, blank bool, problem string) {
	// Trailing whitespace and form feeds go. (OpenSSH never trims a line's
	// first byte: a line of a lone form feed is a bad keyword to it, blank
	// here.)
	s = strings.TrimRight(s, whitespace+"\f")
	if s == "" {
		return l, true, ""
	}
	kw, rest, restOK, ok := strdelim(s)
	if !ok {
		// OpenSSH ignores a line whose keyword has an unterminated
		// quote; such a line is a mistake, and sshdeck says so.
		return l, false, "unterminated quote"
	}
	if kw == "" && restOK {
		// Leading whitespace (or '='): the keyword is the next token.
		kw, rest, restOK, ok = strdelim(rest)
		if !ok {
			return l, false, "unterminated quote"
		}
	}
	if kw == "" || kw[0] == '#' {
		return l, true, ""
	}
	l.keyword, l.lower = kw, strings.ToLower(kw)
	if hasControl(kw) {
		return l, false, "control character in the keyword"
	}
	rest = strings.TrimLeft(rest, whitespace)
	if !restOK || rest == "" {
		return l, false, "no argument after the keyword"
	}
	l.rest = rest
	args, ok := argvSplit(rest)
	if !ok {
		return l, false, "unterminated quote"
	}
	for _, a := range args {
		if hasControl(a) {
			return l, false, "control character in an argument"
		}
	}
	l.args = args
	return l, false, ""
}

// strdelim is OpenSSH's strdelim_internal with split_equals: the first
// token of s and what follows it. restOK is false where OpenSSH's pointer
// becomes NULL (s ended with the token); ok is false for an unterminated
// quote, where OpenSSH returns NULL.
func strdelim(s string) (tok, rest string, restOK, ok bool) {
	i := strings.IndexAny(s, whitespace+`"=`)
	if i < 0 {
		return s, "", false, true
	}
	if s[i] == '"' {
		// The quote is removed and the token runs to the next quote.
		t := s[:i] + s[i+1:]
		j := strings.IndexByte(t[i:], '"')
		if j < 0 {
			return "", "", false, false
		}
		return t[:i+j], strings.TrimLeft(t[i+j+1:], whitespace), true, true
	}
	equals := s[i] == '='
	tok, rest = s[:i], strings.TrimLeft(s[i+1:], whitespace)
	// One '=' may follow the whitespace after the keyword.
	if !equals && strings.HasPrefix(rest, "=") {
		rest = strings.TrimLeft(rest[1:], whitespace)
	}
	return tok, rest, true, true
}

// argvSplit is OpenSSH's argv_split with terminate_on_comment: arguments
// are separated by spaces and tabs; double or single quotes group (and may
// start or end mid-argument); a backslash escapes a quote, a backslash, or
// outside quotes a space, and stays as it is before anything else; a '#'
// where an argument would start ends the line. ok is false for an
// unterminated quote.
func argvSplit(s string) (args []string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '\t' {
			continue
		}
		if s[i] == '#' {
			break
		}
		var b strings.Builder
		var quote byte
	arg:
		for ; i < len(s); i++ {
			c := s[i]
			switch {
			case c == '\\':
				if i+1 < len(s) {
					n := s[i+1]
					if n == '\'' || n == '"' || n == '\\' || (quote == 0 && n == ' ') {
						i++
						c = n
					}
				}
				b.WriteByte(c)
			case quote == 0 && (c == ' ' || c == '\t'):
				break arg
			case quote == 0 && (c == '"' || c == '\''):
				quote = c
			case quote != 0 && c == quote:
				quote = 0
			default:
				b.WriteByte(c)
			}
		}
		if quote != 0 {
			return nil, false
		}
		args = append(args, b.String())
	}
	return args, true
}

// quoteArg returns s as one argument that argvSplit reads back as s: bare
// when that is unambiguous, else in double quotes with '"' and '\'
// escaped. A leading '=' is quoted too, as strdelim would take it for the
// keyword's separator.
func quoteArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"'\\") && s[0] != '#' && s[0] != '=' {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// hasControl reports whether s holds an ASCII control character other
// than a tab (OpenSSH would take it as part of a value; no value sshdeck
// reads has one).
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return true
		}
	}
	return false
}
