package main

// sshdeck host ls|get|add|rm: the host records through the client.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/sshdeck/sshdeck/client"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// clientFlags are the flags of a client command that prints: the profile
// and --json.
type clientFlags struct {
	*profileFlags
	json bool
}

func newClientFlags(name string, stderr io.Writer) (*flag.FlagSet, *clientFlags) {
	fs := flag.NewFlagSet("sshdeck "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &clientFlags{profileFlags: addProfileFlags(fs)}
	fs.BoolVar(&f.json, "json", false, "print the API's JSON, for scripts")
	return fs, f
}

// printJSON prints v as one JSON document.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// withoutCredentials blanks a record's credentials: a listing on a screen
// is not where a password belongs unless the user asks (--credentials).
func withoutCredentials(r hosts.Record) hosts.Record {
	r.Credentials = sshdeck.Credentials{}
	return r
}

// resolveHost is the id of a host given by id or by name: a name must be
// one host's.
func resolveHost(ctx context.Context, c *client.Client, ref string) (int64, error) {
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil && id > 0 {
		return id, nil
	}
	list, err := c.ListHosts(ctx)
	if err != nil {
		return 0, err
	}
	var ids []string
	var id int64
	for _, h := range list {
		if h.Name == ref {
			id = h.ID
			ids = append(ids, strconv.FormatInt(h.ID, 10))
		}
	}
	switch len(ids) {
	case 0:
		return 0, sshdeck.Errorf(sshdeck.NotFound, "no host is named %q", ref)
	case 1:
		return id, nil
	}
	return 0, sshdeck.Errorf(sshdeck.Conflict, "%d hosts are named %q (ids %s): give the id", len(ids), ref, strings.Join(ids, ", "))
}

func hostLsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs, f := newClientFlags("host ls", stderr)
	defer func() { err = f.explain(err) }()
	creds := fs.Bool("credentials", false, "with --json: with the hosts' credentials")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return err
	}
	c, err := clientFor(f.profileFlags)
	if err != nil {
		return err
	}
	list, err := c.ListHosts(ctx)
	if err != nil {
		return err
	}
	if f.json {
		if !*creds {
			for i := range list {
				list[i] = withoutCredentials(list[i])
			}
		}
		return printJSON(stdout, list)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tADDRESS\tUSER\tAUTH\tJUMPS")
	for _, h := range list {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", h.ID, orDash(h.Name), addr(h.IP, h.Port), h.Username, h.AuthType, jumps(h.JumpHosts))
	}
	return tw.Flush()
}

func hostGetCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs, f := newClientFlags("host get", stderr)
	defer func() { err = f.explain(err) }()
	creds := fs.Bool("credentials", false, "with --json: with the host's credentials")
	rest, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	c, err := clientFor(f.profileFlags)
	if err != nil {
		return err
	}
	id, err := resolveHost(ctx, c, rest[0])
	if err != nil {
		return err
	}
	h, err := c.Host(ctx, id)
	if err != nil {
		return err
	}
	if f.json {
		if !*creds {
			*h = withoutCredentials(*h)
		}
		return printJSON(stdout, h)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	rows := [][2]string{
		{"ID", strconv.FormatInt(h.ID, 10)}, {"NAME", orDash(h.Name)}, {"ADDRESS", addr(h.IP, h.Port)},
		{"USER", h.Username}, {"AUTH", string(h.AuthType)}, {"JUMPS", jumps(h.JumpHosts)},
		{"FOLDER", orDash(h.Folder)}, {"TAGS", orDash(strings.Join(h.Tags, ","))},
		{"TUNNELS", strconv.Itoa(len(h.TunnelConnections))}, {"UPDATED", h.UpdatedAt.UTC().Format("2006-01-02 15:04:05Z")},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

func hostAddCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs, f := newClientFlags("host add", stderr)
	defer func() { err = f.explain(err) }()
	in := hosts.Input{}
	fs.StringVar(&in.Name, "name", "", "the host's name")
	fs.StringVar(&in.IP, "ip", "", "IP address or DNS name (required)")
	port := fs.Int("port", 22, "SSH port")
	fs.StringVar(&in.Username, "user", "", "SSH user (required)")
	passwordStdin := fs.Bool("password-stdin", false, "read the SSH password from the first line of stdin")
	keyFile := fs.String("key", "", "private key file to store (authType key)")
	passphraseStdin := fs.Bool("key-passphrase-stdin", false, "read the key's passphrase from the first line of stdin")
	jumpList := fs.String("jump", "", "jump hosts, first hop first: ids or names, comma-separated")
	fs.StringVar(&in.Folder, "folder", "", "folder")
	tags := fs.String("tags", "", "tags, comma-separated")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return err
	}
	switch {
	case *passwordStdin && *keyFile != "":
		return fmt.Errorf("%w: give --password-stdin or --key, not both", errUsage)
	case *passwordStdin && *passphraseStdin:
		return fmt.Errorf("%w: stdin holds one secret: --password-stdin or --key-passphrase-stdin", errUsage)
	case *passphraseStdin && *keyFile == "":
		return fmt.Errorf("%w: --key-passphrase-stdin needs --key", errUsage)
	}
	c, err := clientFor(f.profileFlags)
	if err != nil {
		return err
	}
	in.Port = port
	if *tags != "" {
		in.Tags = strings.Split(*tags, ",")
	}
	auth := string(sshdeck.AuthNone)
	ask := newPrompter(os.Stdin, stderr)
	if *passwordStdin {
		pw, err := ask.ask("SSH password: ", "password", true)
		if err != nil {
			return err
		}
		auth, in.Password = string(sshdeck.AuthPassword), &pw
	}
	if *keyFile != "" {
		data, err := os.ReadFile(*keyFile)
		if err != nil {
			return err
		}
		if len(data) > sshdeck.MaxKeySize {
			return fmt.Errorf("%s is over %d bytes, the largest key sshdeck stores", *keyFile, sshdeck.MaxKeySize)
		}
		key := string(data)
		auth, in.Key = string(sshdeck.AuthKey), &key
		if *passphraseStdin {
			pp, err := ask.ask("Key passphrase: ", "key passphrase", true)
			if err != nil {
				return err
			}
			in.KeyPassword = &pp
		}
	}
	in.AuthType = &auth
	if *jumpList != "" {
		for _, ref := range strings.Split(*jumpList, ",") {
			id, err := resolveHost(ctx, c, strings.TrimSpace(ref))
			if err != nil {
				return fmt.Errorf("--jump %s: %w", ref, err)
			}
			in.JumpHosts = append(in.JumpHosts, sshdeck.JumpHost{HostID: id})
		}
	}
	rec, err := c.CreateHost(ctx, &in)
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(stdout, withoutCredentials(*rec))
	}
	fmt.Fprintln(stdout, rec.ID)
	return nil
}

func hostRmCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs, f := newClientFlags("host rm", stderr)
	defer func() { err = f.explain(err) }()
	rest, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	c, err := clientFor(f.profileFlags)
	if err != nil {
		return err
	}
	id, err := resolveHost(ctx, c, rest[0])
	if err != nil {
		return err
	}
	if err := c.DeleteHost(ctx, id, 0); err != nil {
		return err
	}
	if f.json {
		return printJSON(stdout, client.Message{Message: "SSH host deleted"})
	}
	fmt.Fprintf(stdout, "deleted host %d\n", id)
	return nil
}

func addr(ip string, port int) string {
	if strings.Contains(ip, ":") {
		ip = "[" + ip + "]"
	}
	return ip + ":" + strconv.Itoa(port)
}

func jumps(hops []sshdeck.JumpHost) string {
	ids := make([]string, len(hops))
	for i, h := range hops {
		ids[i] = strconv.FormatInt(h.HostID, 10)
	}
	return orDash(strings.Join(ids, ","))
}
