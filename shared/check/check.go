// Package check holds the field checks that every input of the API shares
// (hosts, tunnels): each returns nil or an *sshdeck.Error with code Invalid
// whose sentence names the field, as the contract asks of a 400.
package check

import (
	"strings"
	"unicode"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Invalid returns an Invalid error with a formatted sentence.
func Invalid(format string, args ...any) error {
	return sshdeck.Errorf(sshdeck.Invalid, format, args...)
}

// First returns the first non-nil error.
func First(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// OrDefault returns *p, or def when p is nil (the field was absent or null).
func OrDefault[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// Port checks a TCP port.
func Port(field string, p int) error {
	if p < 1 || p > 65535 {
		return Invalid("%s must be an integer from 1 to 65535", field)
	}
	return nil
}

// Between checks an integer range, bounds included.
func Between(field string, v, lo, hi int) error {
	if v < lo || v > hi {
		return Invalid("%s must be an integer from %d to %d", field, lo, hi)
	}
	return nil
}

// Limit checks an optional string's length in bytes.
func Limit(field string, s *string, max int) error {
	if s != nil && len(*s) > max {
		return Invalid("%s is longer than %d bytes", field, max)
	}
	return nil
}

// Text checks a string's length in characters and that it holds no control
// characters (nor, with noSpace, white space). min 1 makes it required.
func Text(field, s string, min, max int, noSpace bool) error {
	n := len([]rune(s))
	switch {
	case n < min && min == 1:
		return Invalid("%s is required", field)
	case n > max:
		return Invalid("%s is longer than %d characters", field, max)
	}
	if i := strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsControl(r) || noSpace && unicode.IsSpace(r)
	}); i >= 0 {
		if noSpace {
			return Invalid("%s must not contain white space or control characters", field)
		}
		return Invalid("%s must not contain control characters", field)
	}
	return nil
}

// Plain checks that s holds no control character (C0, DEL, C1) but those
// in allow: "\n\t" for a text that may span lines. Text does this for the
// fields it checks; Plain is for those that take any length or form, as
// passwords do.
func Plain(field, s, allow string) error {
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && !strings.ContainsRune(allow, r) }) >= 0 {
		return Invalid("%s must not contain control characters", field)
	}
	return nil
}

// PlainPtr is Plain of an optional field; nil passes.
func PlainPtr(field string, s *string, allow string) error {
	if s == nil {
		return nil
	}
	return Plain(field, *s, allow)
}
