package main

// sshdeck tunnel ls|connect|disconnect|rm|watch: the tunnel service
// through the client.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/sshdeck/sshdeck/client"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

func tunnelLsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs, f := newClientFlags("tunnel ls", stderr)
	defer func() { err = f.explain(err) }()
	if _, err := parseArgs(fs, args, 0); err != nil {
		return err
	}
	c, err := clientFor(f.profileFlags)
	if err != nil {
		return err
	}
	all, err := c.TunnelStatuses(ctx)
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(stdout, all)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	// The status names no source or endpoint host; HOST is its hostName.
	fmt.Fprintln(tw, "NAME\tSTATE\tMODE\tHOST\tPORTS\tREASON")
	for _, name := range slices.Sorted(maps.Keys(all)) {
		st := all[name]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d->%d\t%s\n", name, st.Status, st.Mode, orDash(st.HostName), st.SourcePort, st.EndpointPort, orDash(reason(st)))
	}
	return tw.Flush()
}

// reason is why a tunnel is in its state, with its error type.
func reason(st client.TunnelStatus) string {
	r := st.Reason
	if st.ErrorType != nil && *st.ErrorType != "" {
		r = "(" + string(*st.ErrorType) + ") " + r
	}
	return r
}

func tunnelConnectCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs, f := newClientFlags("tunnel connect", stderr)
	defer func() { err = f.explain(err) }()
	source := fs.String("source", "", "source host, id or name: the tunnel carries connections to its sourcePort")
	endpoint := fs.String("endpoint", "", "endpoint host, id or name: it listens on 127.0.0.1:endpointPort")
	sourcePort := fs.Int("source-port", 0, "port on the source host the connections go to")
	endpointPort := fs.Int("endpoint-port", 0, "port the endpoint host listens on")
	mode := fs.String("mode", "", "relay (default) or direct")
	autoStart := fs.Bool("auto-start", false, "keep the tunnel, and start it whenever the service starts")
	maxRetries := fs.Int("max-retries", -1, "retries after a failure (default the service's, 3)")
	rest, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	c, err := clientFor(f.profileFlags)
	if err != nil {
		return err
	}
	req := &client.ConnectRequest{Name: rest[0], Mode: *mode, AutoStart: *autoStart}
	// A name alone starts the host tunnel of that name ("12:0"); the
	// fields make or restart a tunnel of two stored hosts.
	if *source != "" || *endpoint != "" || *sourcePort != 0 || *endpointPort != 0 {
		if *source == "" || *endpoint == "" || *sourcePort == 0 || *endpointPort == 0 {
			return fmt.Errorf("%w: a tunnel of two hosts needs --source, --endpoint, --source-port and --endpoint-port", errUsage)
		}
		src, err := resolveHost(ctx, c, *source)
		if err != nil {
			return fmt.Errorf("--source %s: %w", *source, err)
		}
		dst, err := resolveHost(ctx, c, *endpoint)
		if err != nil {
			return fmt.Errorf("--endpoint %s: %w", *endpoint, err)
		}
		req.SourceHostID, req.EndpointHostID = &src, &dst
		req.SourcePort, req.EndpointPort = sourcePort, endpointPort
	}
	if *maxRetries >= 0 {
		req.MaxRetries = maxRetries
	}
	if err := c.Connect(ctx, req); err != nil {
		return err
	}
	if f.json {
		return printJSON(stdout, client.Message{Message: "Connection request received"})
	}
	fmt.Fprintf(stdout, "connecting %s: follow it with sshdeck tunnel watch %s\n", req.Name, req.Name)
	return nil
}

// tunnelNameCommand is a command of one tunnel's name: disconnect, rm.
func tunnelNameCommand(name, done string, call func(*client.Client, context.Context, string) error) command {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
		fs, f := newClientFlags("tunnel "+name, stderr)
		defer func() { err = f.explain(err) }()
		rest, err := parseArgs(fs, args, 1)
		if err != nil {
			return err
		}
		c, err := clientFor(f.profileFlags)
		if err != nil {
			return err
		}
		if err := call(c, ctx, rest[0]); err != nil {
			return err
		}
		if f.json {
			return printJSON(stdout, client.Message{Message: done})
		}
		fmt.Fprintf(stdout, "%s: %s\n", rest[0], done)
		return nil
	}
}

// command is the shape of every sshdeck command.
type command func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// watchPause is the wait before a status stream is opened again after it
// ended: the server ends each after an hour, and a failing one should not
// be hammered.
const watchPause = time.Second

func tunnelWatchCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs, f := newClientFlags("tunnel watch", stderr)
	defer func() { err = f.explain(err) }()
	rest, err := parseArgs(fs, args, anyCount)
	if err != nil {
		return err
	}
	if len(rest) > 1 {
		return fmt.Errorf("%w: tunnel watch takes at most one tunnel name", errUsage)
	}
	c, err := clientFor(f.profileFlags)
	if err != nil {
		return err
	}
	// last is what was printed of each tunnel: a new stream starts with
	// every tunnel's status again, which is no change.
	last := map[string]client.TunnelStatus{}
	for {
		for ev, err := range c.WatchTunnels(ctx) {
			if ctx.Err() != nil {
				return nil // interrupted: the way a watch ends
			}
			if err != nil {
				return err
			}
			if len(rest) == 1 && ev.Name != rest[0] {
				continue
			}
			if ev.Kind == client.EventStatus {
				if prev, ok := last[ev.Name]; ok && sameStatus(prev, *ev.Status) {
					continue
				}
				last[ev.Name] = *ev.Status
			} else {
				delete(last, ev.Name)
			}
			if err := printEvent(stdout, ev, f.json); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(watchPause):
		}
	}
}

// sameStatus: the countdown to the next retry is no change.
func sameStatus(a, b client.TunnelStatus) bool {
	a.NextRetryIn, b.NextRetryIn = 0, 0
	ea, eb := a.ErrorType, b.ErrorType
	a.ErrorType, b.ErrorType = nil, nil
	return a == b && (ea == nil) == (eb == nil) && (ea == nil || *ea == *eb)
}

// printEvent prints one change: a line of text, or a JSON object per line
// ({"event": "status", "status": …} or {"event": "deleted", "name": …}).
func printEvent(w io.Writer, ev client.TunnelEvent, asJSON bool) error {
	if asJSON {
		line := struct {
			Event  string               `json:"event"`
			Name   string               `json:"name"`
			Status *client.TunnelStatus `json:"status,omitempty"`
		}{ev.Kind, ev.Name, ev.Status}
		return json.NewEncoder(w).Encode(line)
	}
	now := time.Now().UTC().Format(time.TimeOnly)
	var err error
	switch ev.Kind {
	case client.EventDeleted:
		_, err = fmt.Fprintf(w, "%s  %s  deleted\n", now, ev.Name)
	default:
		st := ev.Status
		line := fmt.Sprintf("%s  %s  %s", now, ev.Name, st.Status)
		if st.Status == sshdeck.TunnelWaiting && st.NextRetryIn > 0 {
			line += " (retry " + strconv.Itoa(st.RetryCount+1) + " in " + strconv.Itoa(st.NextRetryIn) + "s)"
		}
		if r := reason(*st); r != "" {
			line += "  " + r
		}
		_, err = fmt.Fprintln(w, line)
	}
	return err
}
