package main

// sshdeck login and sshdeck logout: a profile's token, from POST
// /auth/login (or given on stdin), stored in the config file.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/sshdeck/sshdeck/client"
	"github.com/sshdeck/sshdeck/shared/accounts"
)

// prompter asks the user: on a terminal with the question on stderr (and
// secrets without echo), else one line of stdin per answer, for scripts.
type prompter struct {
	in     *os.File
	lines  *bufio.Reader
	prompt io.Writer
}

func newPrompter(in *os.File, prompt io.Writer) *prompter {
	return &prompter{in: in, lines: bufio.NewReader(io.LimitReader(in, 64<<10)), prompt: prompt}
}

func (p *prompter) terminal() bool { return term.IsTerminal(int(p.in.Fd())) }

// ask reads one answer; secret ones are not echoed on a terminal.
func (p *prompter) ask(question, what string, secret bool) (string, error) {
	if p.terminal() {
		fmt.Fprint(p.prompt, question)
		if secret {
			b, err := term.ReadPassword(int(p.in.Fd()))
			fmt.Fprintln(p.prompt)
			return string(b), err
		}
	}
	line, err := p.lines.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the %s from stdin: %w", what, err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("no %s on stdin: run on a terminal, or pipe one line per answer", what)
	}
	return line, nil
}

func loginCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sshdeck login", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", os.Getenv("SSHDECK_URL"), "base URL of the API (SSHDECK_URL)")
	tunnelURL := fs.String("tunnel-url", os.Getenv("SSHDECK_TUNNEL_URL"), "URL of the tunnel service (SSHDECK_TUNNEL_URL)")
	name := fs.String("profile", os.Getenv("SSHDECK_PROFILE"), "name of the profile to store (SSHDECK_PROFILE, default \"default\")")
	user := fs.String("user", "", "user name (else asked)")
	tokenStdin := fs.Bool("token-stdin", false, "read a token from stdin instead of logging in with a password")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return err
	}
	if *base == "" {
		return fmt.Errorf("%w: sshdeck login needs --url (the API's base URL)", errUsage)
	}
	if *name == "" {
		*name = defaultProfile
	}
	if *tunnelURL == "" && strings.TrimSuffix(*base, "/") == defaultURL {
		*tunnelURL = defaultTunnelURL
	}
	ps, path, err := loadProfiles()
	if err != nil {
		return err
	}
	c := &client.Client{BaseURL: *base, TunnelURL: *tunnelURL}
	ask := newPrompter(os.Stdin, stderr)
	prof := &profile{URL: *base, TunnelURL: *tunnelURL}
	if *tokenStdin {
		token, err := ask.ask("Token: ", "token", true)
		if err != nil {
			return err
		}
		c.Token = strings.TrimSpace(token)
		me, err := c.Me(ctx)
		if client.IsUnauthorized(err) {
			return errors.New("the token is not valid here (unknown, expired or revoked): nothing was stored")
		} else if err != nil {
			return err
		}
		prof.Token, prof.User = c.Token, me.Name
	} else {
		if *user == "" {
			if *user, err = ask.ask("User: ", "user name", false); err != nil {
				return err
			}
		}
		password, err := ask.ask("Password: ", "password", true)
		if err != nil {
			return err
		}
		req := accounts.LoginRequest{Username: *user, Password: password}
		res, err := c.Login(ctx, req)
		if client.NeedsTOTP(err) {
			if req.TOTP, err = ask.ask("TOTP code: ", "TOTP code", false); err != nil {
				return err
			}
			res, err = c.Login(ctx, req)
		}
		if err != nil {
			return err
		}
		prof.Token, prof.TokenID, prof.User, prof.ExpiresAt = res.Token, res.ID, *user, res.ExpiresAt
	}
	ps.Profiles[*name] = prof
	ps.Current = *name
	if err := ps.save(path); err != nil {
		return fmt.Errorf("logged in, but the profile could not be stored: %w", err)
	}
	expiry := "never expires"
	if !prof.ExpiresAt.IsZero() {
		expiry = "expires " + prof.ExpiresAt.UTC().Format("2006-01-02 15:04 MST")
	}
	fmt.Fprintf(stdout, "logged in to %s as %s: profile %q (current), token %s\n", prof.URL, prof.User, *name, expiry)
	return nil
}

func logoutCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sshdeck logout", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("profile", os.Getenv("SSHDECK_PROFILE"), "profile to log out of (SSHDECK_PROFILE, default the current one)")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return err
	}
	ps, path, err := loadProfiles()
	if err != nil {
		return err
	}
	if *name == "" {
		*name = ps.Current
	}
	prof, ok := ps.Profiles[*name]
	if !ok {
		return fmt.Errorf("no profile %q in %s", *name, path)
	}
	revoked := "kept the token (it was given with --token-stdin, not made by login)"
	if prof.TokenID != "" {
		c := &client.Client{BaseURL: prof.URL, Token: prof.Token}
		// A token already expired or revoked is as good as revoked.
		if err := c.DeleteToken(ctx, prof.TokenID); err != nil && !client.IsUnauthorized(err) {
			return fmt.Errorf("the token could not be revoked, so the profile was kept: %w", err)
		}
		revoked = "revoked its token " + prof.TokenID
	}
	delete(ps.Profiles, *name)
	if ps.Current == *name {
		ps.Current = ""
	}
	if err := ps.save(path); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "logged out of profile %q: %s\n", *name, revoked)
	return nil
}
