package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// userPasswdCommand is `sshdeck user passwd NAME`: it gives the user a
// password for POST /auth/login, asked twice without echo on a terminal,
// else read from the first line of stdin (for scripts: never an argument,
// which other users of the machine could read in the process list).
func userPasswdCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg settings
	fs := newAdminFlags("user passwd", &cfg, stderr)
	return runAdmin(ctx, fs, &cfg, args, 1, func(a admin, rest []string) error {
		password, err := readPassword(os.Stdin, stderr)
		if err != nil {
			return err
		}
		u, err := a.SetPassword(ctx, rest[0], password)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "set the password of user %s (%s): it logs in with POST /auth/login\n", u.Name, u.ID)
		return nil
	})
}

// readPassword reads a new password from in: twice, without echo, when in
// is a terminal; else its first line, without the line end.
func readPassword(in *os.File, prompt io.Writer) (string, error) {
	if fd := int(in.Fd()); term.IsTerminal(fd) {
		ask := func(question string) (string, error) {
			fmt.Fprint(prompt, question)
			b, err := term.ReadPassword(fd)
			fmt.Fprintln(prompt)
			return string(b), err
		}
		first, err := ask("New password: ")
		if err != nil {
			return "", err
		}
		again, err := ask("Again: ")
		if err != nil {
			return "", err
		}
		if first != again {
			return "", errors.New("the two passwords differ; nothing was changed")
		}
		return first, nil
	}
	line, err := bufio.NewReader(io.LimitReader(in, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from stdin: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("no password on stdin: pipe it in (printf '%s\\n' \"$PASSWORD\" | sshdeck user passwd NAME) or run on a terminal")
	}
	return line, nil
}
