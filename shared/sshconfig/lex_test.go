package sshconfig

import (
	"reflect"
	"testing"
)

// TestLexLine pins the splitting OpenSSH does (TestOpenSSHLexer checks the
// same against ssh itself).
func TestLexLine(t *testing.T) {
	for _, tc := range []struct {
		in      string
		keyword string
		rest    string
		args    []string
		blank   bool
		problem string
	}{
		{in: "", blank: true},
		{in: "   \t ", blank: true},
		{in: "# comment", blank: true},
		{in: "   #indented comment", blank: true},
		{in: "User bob", keyword: "User", rest: "bob", args: []string{"bob"}},
		{in: "  User\tbob  \r", keyword: "User", rest: "bob", args: []string{"bob"}},
		{in: "User=bob", keyword: "User", rest: "bob", args: []string{"bob"}},
		{in: "User = bob", keyword: "User", rest: "bob", args: []string{"bob"}},
		{in: "User==bob", keyword: "User", rest: "=bob", args: []string{"=bob"}},
		{in: "User = = bob", keyword: "User", rest: "= bob", args: []string{"=", "bob"}},
		{in: "=User bob", keyword: "User", rest: "bob", args: []string{"bob"}},
		{in: `"User" bob`, keyword: "User", rest: "bob", args: []string{"bob"}},
		{in: `"Us er" bob`, keyword: "Us er", rest: "bob", args: []string{"bob"}},
		{in: `"User bob`, problem: "unterminated quote"},
		{in: "User", keyword: "User", problem: "no argument after the keyword"},
		{in: "User   ", keyword: "User", problem: "no argument after the keyword"},
		{in: "User=", keyword: "User", problem: "no argument after the keyword"},
		{in: "User # c", keyword: "User", rest: "# c", args: nil},
		{in: "User bob # c", keyword: "User", rest: "bob # c", args: []string{"bob"}},
		{in: "User bob#c", keyword: "User", rest: "bob#c", args: []string{"bob#c"}},
		{in: `User "b o"b 'c d' e\ f`, keyword: "User", rest: `"b o"b 'c d' e\ f`, args: []string{"b ob", "c d", "e f"}},
		{in: `User "a\"b" 'a\'b' "a'b" 'a"b' a\\b a\qb`, keyword: "User", rest: `"a\"b" 'a\'b' "a'b" 'a"b' a\\b a\qb`,
			args: []string{`a"b`, `a'b`, `a'b`, `a"b`, `a\b`, `a\qb`}},
		{in: `User "a\ b"`, keyword: "User", rest: `"a\ b"`, args: []string{`a\ b`}},
		{in: `User "bob`, keyword: "User", problem: "unterminated quote"},
		{in: `User bob # "unterminated in a comment`, keyword: "User", rest: `bob # "unterminated in a comment`, args: []string{"bob"}},
		{in: `User ""`, keyword: "User", rest: `""`, args: []string{""}},
		{in: "User a\x01b", keyword: "User", problem: "control character in an argument"},
		{in: "User\fbob", keyword: "User\fbob", problem: "control character in the keyword"},
		{in: "User bob\f", keyword: "User", rest: "bob", args: []string{"bob"}},
	} {
		l, blank, problem := lexLine(tc.in)
		if blank != tc.blank || problem != tc.problem {
			t.Errorf("lexLine(%q): blank %v problem %q, want %v %q", tc.in, blank, problem, tc.blank, tc.problem)
			continue
		}
		if blank || problem != "" && tc.keyword == "" {
			continue
		}
		if l.keyword != tc.keyword {
			t.Errorf("lexLine(%q): keyword %q, want %q", tc.in, l.keyword, tc.keyword)
		}
		if problem != "" {
			continue
		}
		if l.rest != tc.rest || !reflect.DeepEqual(l.args, tc.args) {
			t.Errorf("lexLine(%q): rest %q args %q, want %q %q", tc.in, l.rest, l.args, tc.rest, tc.args)
		}
	}
}

// TestQuoteArg: what quoteArg writes argvSplit reads back, as one argument,
// also as the first one after a keyword.
func TestQuoteArg(t *testing.T) {
	for _, s := range []string{
		"plain", "", " ", "two words", `"`, `'`, `\`, `\\`, `a\`, `\"`, "#start", "mid#dle",
		"=start", "mid=dle", "tab\there", `~/my keys/"id"`, "ünïcode", `a'b"c\d e`,
	} {
		q := quoteArg(s)
		l, blank, problem := lexLine("IdentityFile " + q)
		if blank || problem != "" || !reflect.DeepEqual(l.args, []string{s}) {
			t.Errorf("quoteArg(%q) = %s, read back as %q (%v %q)", s, q, l.args, blank, problem)
		}
		l, _, _ = lexLine("IdentityFile=" + q)
		if !reflect.DeepEqual(l.args, []string{s}) {
			t.Errorf("quoteArg(%q) = %s after '=', read back as %q", s, q, l.args)
		}
	}
}
