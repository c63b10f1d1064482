package main

// sshdeck host import and sshdeck host export: the client side of
// POST /ssh/db/host/import and GET /ssh/db/host/export, through the
// client package. The import maps an ssh_config here, with the server's own
// mapping (shared/sshconfig, shared/hostconfig), because only this machine
// can read the IdentityFiles: it uploads each host's key file and sends
// the hosts as the JSON import, whose item ids keep the references
// between them (ProxyJump, forwards).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sshdeck/sshdeck/client"
	"github.com/sshdeck/sshdeck/shared/hostconfig"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshconfig"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// defaultURL is serve's default address.
const defaultURL = "http://127.0.0.1:8080"

func hostExportCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("sshdeck host export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	p := addProfileFlags(fs)
	defer func() { err = p.explain(err) }()
	format := fs.String("format", "ssh_config", "ssh_config or json")
	creds := fs.Bool("credentials", false, "with the hosts' credentials (format json only)")
	local := fs.Int64("local", 0, "id of the host that stands for the machine the config is used on: its tunnels become forwards (format ssh_config)")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return err
	}
	c, err := clientFor(p)
	if err != nil {
		return err
	}
	body, err := c.ExportHosts(ctx, client.ExportOptions{Format: *format, Credentials: *creds, Local: *local})
	if err != nil {
		return err
	}
	defer body.Close()
	_, err = io.Copy(stdout, body)
	return err
}

func hostImportCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("sshdeck host import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	p := addProfileFlags(fs)
	defer func() { err = p.explain(err) }()
	local := fs.String("local", "", "alias of the Host of the file that stands for the machine the config is used on: its forwards become tunnels")
	rest, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	c, err := clientFor(p)
	if err != nil {
		return err
	}
	cfg, err := readSSHConfig(rest[0])
	if err != nil {
		return err
	}
	// The names of the stored hosts, for ProxyJump hops that name no Host
	// of the file, as the server's ssh_config import resolves them.
	stored, err := storedHosts(ctx, c)
	if err != nil {
		return err
	}
	existing := map[string][]int64{}
	var maxID int64
	for _, h := range stored {
		if h.Name != "" {
			existing[h.Name] = append(existing[h.Name], h.ID)
		}
		maxID = max(maxID, h.ID)
	}
	items, skipped, err := hostconfig.Import(cfg, hostconfig.Options{Existing: existing, Local: *local})
	if err != nil {
		return err
	}
	for _, s := range skipped {
		where := "line " + strconv.Itoa(s.Line)
		if s.Host != "" {
			where += " (Host " + s.Host + ")"
		}
		fmt.Fprintf(stderr, "%s: %s: skipped: %s\n", where, s.Keyword, s.Reason)
	}
	// The keys, and every item's own error, before anything is sent.
	failed := 0
	for i := range items {
		if items[i].Err == nil && i < len(cfg.Hosts) && items[i].Input.IdentityFile != "" {
			items[i].Err = readIdentityFile(&cfg.Hosts[i], items[i].Input)
		}
		if items[i].Err != nil {
			failed++
			fmt.Fprintf(stderr, "items[%d]: %s\n", i, errorText(items[i].Err))
		}
	}
	if failed > 0 {
		return fmt.Errorf("nothing was imported: %d of %d hosts have errors", failed, len(items))
	}
	list := jsonItems(items, maxID+1)
	body, err := json.Marshal(list)
	if err != nil {
		return err
	}
	if len(body) > web.MaxJSONBody {
		return fmt.Errorf("nothing was imported: the hosts with their keys are %d bytes, over the API's %d: import them from several files", len(body), web.MaxJSONBody)
	}
	res, err := c.ImportHosts(ctx, list)
	if res == nil || len(res.Results) != len(items) {
		if err == nil {
			err = fmt.Errorf("POST /ssh/db/host/import: %d results for %d hosts", len(res.Results), len(items))
		}
		return err
	}
	for _, r := range res.Results {
		switch {
		case r.Error != "":
			failed++
			fmt.Fprintln(stderr, itemError(cfg, items, r))
		case err == nil:
			fmt.Fprintf(stdout, "imported %s as host %d\n", items[r.Index].Input.Name, r.ID)
		}
	}
	if err != nil {
		return fmt.Errorf("nothing was imported: %d of %d hosts have errors", failed, len(items))
	}
	return nil
}

// itemError is the server's error of an item, naming the Host line of the
// config it came from (the server had the JSON, not the config).
func itemError(cfg *sshconfig.Config, items []hosts.ImportItem, r hosts.ImportResult) string {
	prefix := fmt.Sprintf("items[%d]: ", r.Index)
	msg, ok := strings.CutPrefix(r.Error, prefix)
	if !ok || r.Index < 0 || r.Index >= len(items) {
		return r.Error
	}
	if r.Index < len(cfg.Hosts) {
		h := &cfg.Hosts[r.Index]
		return fmt.Sprintf("%sline %d (Host %s): %s", prefix, h.Line, h.Alias, msg)
	}
	return fmt.Sprintf("%sProxyJump hop %s: %s", prefix, items[r.Index].Input.Name, msg)
}

// readSSHConfig parses the file at path, or stdin for "-".
func readSSHConfig(path string) (*sshconfig.Config, error) {
	r := io.Reader(os.Stdin)
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	return sshconfig.Parse(r)
}

// storedHost is what the import needs of a stored host.
type storedHost struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// storedHosts are the caller's hosts, from the export (which holds no
// credentials unless asked, where the list would open them all).
func storedHosts(ctx context.Context, c *client.Client) ([]storedHost, error) {
	body, err := c.ExportHosts(ctx, client.ExportOptions{Format: "json"})
	if err != nil {
		return nil, err
	}
	defer body.Close()
	var list []storedHost
	if err := json.NewDecoder(body).Decode(&list); err != nil {
		return nil, fmt.Errorf("GET /ssh/db/host/export: %w", err)
	}
	return list, nil
}

// readIdentityFile puts the content of the host's identity file in the
// input's key. The path is kept as written (identityFile); a leading ~/
// is the user's home. %-tokens and ${VAR} are the item's error: ssh
// expands them per connection, this command does not guess.
func readIdentityFile(h *sshconfig.Host, in *hosts.Input) error {
	name := in.IdentityFile
	fail := func(format string, a ...any) error {
		return sshdeck.Errorf(sshdeck.Invalid, "line %d (Host %s): IdentityFile %s: %s", h.Line, h.Alias, name, fmt.Sprintf(format, a...))
	}
	if strings.Contains(name, "%") || strings.Contains(name, "${") {
		return fail("sshdeck host import does not expand %%-tokens or ${VAR}: write the path out")
	}
	path := name
	switch {
	case strings.HasPrefix(path, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return fail("%v", err)
		}
		path = filepath.Join(home, path[2:])
	case strings.HasPrefix(path, "~"):
		return fail("only ~/ is expanded (the user's home): write the path out")
	}
	f, err := os.Open(path)
	if err != nil {
		return fail("%s", fileError(path, err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, sshdeck.MaxKeySize+1))
	switch {
	case err != nil:
		return fail("%s", fileError(path, err))
	case len(data) > sshdeck.MaxKeySize:
		return fail("%s is over %d bytes, the largest key sshdeck stores", path, sshdeck.MaxKeySize)
	case !utf8.Valid(data):
		return fail("%s is not a text key file (OpenSSH or PEM)", path)
	}
	key := string(data)
	in.Key = &key
	return nil
}

// fileError is err about path, naming it once.
func fileError(path string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return path + ": " + err.Error()
}

// jsonItems are the items as the JSON import takes them: item i has the id
// first+i (above every stored host's id, so that no reference to a stored
// host names an item), and a hop or a tunnel's endpoint that is an item
// names it by that id.
func jsonItems(items []hosts.ImportItem, first int64) []hosts.JSONItem {
	out := make([]hosts.JSONItem, len(items))
	for i, item := range items {
		out[i] = hosts.JSONItem{ID: first + int64(i), Input: *item.Input}
		in := &out[i].Input
		in.JumpHosts = append([]sshdeck.JumpHost(nil), in.JumpHosts...)
		for j, k := range item.HopItems {
			if k >= 0 {
				in.JumpHosts[j].HostID = first + int64(k)
			}
		}
		in.TunnelConnections = append([]hosts.TunnelInput(nil), in.TunnelConnections...)
		for j, k := range item.EndpointItems {
			if k >= 0 {
				in.TunnelConnections[j].EndpointHost = strconv.FormatInt(first+int64(k), 10)
			}
		}
	}
	return out
}
