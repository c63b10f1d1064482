package tunnelbench

import (
	"context"
	"fmt"
	"time"

	"github.com/sshdeck/sshdeck/bench/report"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

type connectResult struct {
	answered, connected, carrying, openssh durations
}

// connectLatency times connect requests one after the other, each a new
// tunnel on a new port: POST /ssh/tunnel/connect → its 200 answer, → the
// status stream's `connected` event, → the endpoint port accepting; and,
// for comparison, OpenSSH's ssh -J -R from its start to the endpoint port
// accepting. Each tunnel is disconnected before the next.
func (e *env) connectLatency(ctx context.Context, o report.Options, p *ports, n int) (*connectResult, error) {
	stream, err := e.openStream(ctx)
	if err != nil {
		return nil, err
	}
	defer stream.close()
	r := &connectResult{}
	for i := range n {
		port, err := p.get()
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("connect-%d", i)
		began := time.Now()
		if err := e.post(ctx, "/ssh/tunnel/connect", e.request(name, port)); err != nil {
			return nil, err
		}
		r.answered = append(r.answered, time.Since(began))
		if err := stream.wait(ctx, name, sshdeck.TunnelConnected); err != nil {
			return nil, err
		}
		r.connected = append(r.connected, time.Since(began))
		if err := waitListening(ctx, port, listenPatience); err != nil {
			return nil, err
		}
		r.carrying = append(r.carrying, time.Since(began))
		if err := e.disconnect(ctx, name); err != nil {
			return nil, err
		}
	}
	for range n {
		port, err := p.get()
		if err != nil {
			return nil, err
		}
		ssh, took, err := e.startOpenSSH(ctx, port, sshRun{})
		if err != nil {
			return nil, err
		}
		ssh.stop()
		r.openssh = append(r.openssh, took)
	}
	o.Logf("tunnel: connected p50 %v, OpenSSH listening p50 %v", r.connected.quantile(0.5), r.openssh.quantile(0.5))
	return r, nil
}

func (r *connectResult) section() report.Section {
	t := report.Table{Header: []string{"from the request (ms)", "p50", "p99", "min", "max"}}
	row := func(what string, d durations) {
		s := d.sorted()
		t.Add(what, ms(d.quantile(0.5)), ms(d.quantile(0.99)), ms(s[0]), ms(s[len(s)-1]))
	}
	row("sshdeck: POST /ssh/tunnel/connect answered", r.answered)
	row("sshdeck: status stream says `connected`", r.connected)
	row("sshdeck: endpoint port accepts", r.carrying)
	row("OpenSSH `ssh -J source -R …`: endpoint port accepts", r.openssh)
	return report.Section{
		Title:   "Tunnels: time to connect",
		Command: command,
		Text: fmt.Sprintf(`%d connect requests, one after the other, each a new tunnel (a new endpoint port) through
the tunnel service's HTTP API, timed from sending POST /ssh/tunnel/connect to its answer, to
the `+"`connected`"+` event of GET /ssh/tunnel/status/stream (opened before), and to the endpoint
port accepting a TCP connection (polled every 2 ms). Each tunnel is disconnected before the
next. Both hops are sshd on loopback with ed25519 keys; a connect is two SSH handshakes (the
endpoint's inside a channel of the source's), the remote forward, and the store's writes.
The last row is OpenSSH doing the same (process start to the endpoint port accepting), as
many times. With %d samples, p99 is the slowest.`, len(r.connected), len(r.connected)),
		Tables: []report.Table{t},
	}
}
