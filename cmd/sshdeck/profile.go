package main

// The profiles of the client commands: a config file of named logins
// (URL, tunnel URL, token), one of them current. Every client command gets
// its *client.Client from clientFor.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sshdeck/sshdeck/client"
)

// defaultTunnelURL is serve's default tunnel service, the partner of
// defaultURL.
const defaultTunnelURL = "http://127.0.0.1:8081"

// defaultProfile is the profile of a login that names none.
const defaultProfile = "default"

// profile is one login: where and as whom.
type profile struct {
	URL       string    `json:"url"`
	TunnelURL string    `json:"tunnelUrl,omitempty"`
	Token     string    `json:"token"`
	TokenID   string    `json:"tokenId,omitempty"` // "" for a token given with --token-stdin
	User      string    `json:"user,omitempty"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// profiles is the config file.
type profiles struct {
	Current  string              `json:"current,omitempty"`
	Profiles map[string]*profile `json:"profiles"`
}

// configPath is the config file: $SSHDECK_CONFIG, else sshdeck/config.json
// in the user's config directory.
func configPath() (string, error) {
	if p := os.Getenv("SSHDECK_CONFIG"); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no config directory for the profiles (set SSHDECK_CONFIG): %w", err)
	}
	return filepath.Join(dir, "sshdeck", "config.json"), nil
}

// loadProfiles reads the config file; none is an empty one.
func loadProfiles() (*profiles, string, error) {
	path, err := configPath()
	if err != nil {
		return nil, "", err
	}
	ps := &profiles{Profiles: map[string]*profile{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ps, path, nil
	}
	if err != nil {
		return nil, "", err
	}
	if err := json.Unmarshal(data, ps); err != nil {
		return nil, "", fmt.Errorf("%s: not a config of sshdeck: %w", path, err)
	}
	if ps.Profiles == nil {
		ps.Profiles = map[string]*profile{}
	}
	return ps, path, nil
}

// save writes the config file atomically (a temporary file renamed over
// it, so that a crash leaves the old file or the new, never half of one),
// mode 0600 in a directory of mode 0700: it holds bearer tokens.
func (ps *profiles) save(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	data, err := json.MarshalIndent(ps, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".config-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename, there is nothing to remove
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// profileFlags are the flags every client command takes.
type profileFlags struct {
	// name is --profile, else SSHDECK_PROFILE; "" for the current one.
	name string
	// url is --url, over SSHDECK_URL and the profile.
	url string
	// source says where the token came from, once clientFor has run, for
	// the message of a 401 (explain).
	source tokenSource
}

// tokenSource is where a command's token came from.
type tokenSource struct {
	profile string // the profile's name
	env     bool   // SSHDECK_TOKEN
}

// addProfileFlags adds --profile and --url to a client command.
func addProfileFlags(fs *flag.FlagSet) *profileFlags {
	p := &profileFlags{}
	fs.StringVar(&p.name, "profile", os.Getenv("SSHDECK_PROFILE"), "profile of sshdeck login to use (SSHDECK_PROFILE, default the current one)")
	fs.StringVar(&p.url, "url", "", "base URL of the API, over SSHDECK_URL and the profile's")
	return p
}

// clientFor is the client every client command calls the API with: the
// profile of --profile (else SSHDECK_PROFILE, else the current one of the
// config file), whose fields SSHDECK_URL, SSHDECK_TUNNEL_URL and
// SSHDECK_TOKEN override, and --url over them all. Without a URL anywhere
// it is serve's default (http://127.0.0.1:8080, tunnel service :8081). It
// records where the token came from in p, for p.explain. A command that
// needs no token (none yet) still gets a client; the API's 401 then says
// so, through p.explain.
func clientFor(p *profileFlags) (*client.Client, error) {
	ps, path, err := loadProfiles()
	if err != nil {
		return nil, err
	}
	name := p.name
	if name == "" {
		name = ps.Current
	}
	var prof profile
	if name != "" {
		found, ok := ps.Profiles[name]
		if !ok && p.name != "" {
			return nil, fmt.Errorf("no profile %q in %s: log in with sshdeck login --url URL --profile %s", name, path, name)
		}
		if ok {
			prof = *found
		}
	}
	p.source = tokenSource{profile: name}
	c := &client.Client{BaseURL: prof.URL, TunnelURL: prof.TunnelURL, Token: prof.Token}
	if u := os.Getenv("SSHDECK_URL"); u != "" {
		c.BaseURL = u
	}
	if u := os.Getenv("SSHDECK_TUNNEL_URL"); u != "" {
		c.TunnelURL = u
	}
	if t := strings.TrimSpace(os.Getenv("SSHDECK_TOKEN")); t != "" {
		c.Token, p.source.env = t, true
	}
	if p.url != "" {
		c.BaseURL = p.url
	}
	if c.BaseURL == "" {
		c.BaseURL = defaultURL
	}
	if c.TunnelURL == "" && strings.TrimSuffix(c.BaseURL, "/") == defaultURL {
		c.TunnelURL = defaultTunnelURL
	}
	if c.Token == "" {
		return nil, p.noToken()
	}
	return c, nil
}

// noToken is the error of a command without any token.
func (p *profileFlags) noToken() error {
	if p.source.profile != "" {
		return fmt.Errorf("profile %q has no token: run sshdeck login --profile %s --url URL, or set SSHDECK_TOKEN", p.source.profile, p.source.profile)
	}
	return errors.New("no token: log in with sshdeck login --url URL, or set SSHDECK_TOKEN to a token of yours (sshdeck token create)")
}

// explain turns a 401 into the one line that says which token failed and
// how to mend it; other errors pass as they are.
func (p *profileFlags) explain(err error) error {
	if !client.IsUnauthorized(err) {
		return err
	}
	if p.source.env {
		return errors.New("the token in SSHDECK_TOKEN is expired or revoked: set it to a valid token, or unset it to use the profile of sshdeck login")
	}
	name := p.source.profile
	if name == "" {
		name = defaultProfile
	}
	return fmt.Errorf("the token of profile %q is expired or revoked: run sshdeck login --profile %s", name, name)
}
