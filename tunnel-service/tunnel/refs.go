package tunnel

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/sshdeck/sshdeck/shared/check"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Tunnels from stored hosts keep references, not copies (API.md, "Hosts
// as OpenSSH users keep them"). A tunnel connected with sourceHostId or
// endpointHostId, and a host's tunnelConnection (written by the hosts
// service as "<host id>:<index>", sshdeck.HostTunnelSpec), has a spec
// that names the hosts (TunnelSpec.SourceHostID, EndpointHostID,
// EndpointHost) and a record that holds no credential of theirs. Each
// attempt reads them (hops): the source's host and its route of jump hosts,
// the endpoint's host by id or, for a tunnelConnection, by id or name, each
// checked by the same resolve and parse as a connect request's, and then
// dials as any tunnel does (the denied ranges are the dialer's, per hop).
// So a host's new password, address or route is what the next attempt
// uses, and a host saved after the tunnel that names it is found then.
//
// A host that is missing, or whose route is broken, is that attempt's
// failure, with a reason naming it ("endpointHost \"web\": no host of
// yours has this name or id"), retried under the tunnel's maxRetries as a
// network failure is: hosts may be saved in any order, and saving the
// missing one mends it. Its class is unknown: none of the transport's
// classes (network, timeout, authentication…) is true of it, and unknown
// is the class already retried for what no other class says, so clients
// need learn no new one. The hosts service bumps the generation of the
// tunnels a saved host concerns (shared/hosts, tunnels.go), so a tunnel
// waiting for its endpoint restarts at the running replica's next
// heartbeat rather than at its next retry.
//
// A host tunnel whose host is gone, or whose host no longer has its item,
// is not retried: the run ends and its record is deleted (ranOut), which
// closes the window of a host saved or deleted with its tunnel records not
// written after it (a crash between the two writes).

// referencing returns the spec and credentials a connect request stores:
// a side given by host id keeps its reference and its pin, and no copy of
// what resolve read; a side given inline is kept whole.
func referencing(req *ConnectRequest, spec sshdeck.TunnelSpec, creds sshdeck.TunnelCredentials) (sshdeck.TunnelSpec, sshdeck.TunnelCredentials) {
	if req.SourceHostID != nil {
		spec.SourceHostID = *req.SourceHostID
		spec.Source, spec.Jumps = sshdeck.TunnelHop{HostKey: spec.Source.HostKey}, nil
		creds.Source, creds.Jumps = sshdeck.Credentials{}, nil
	}
	if req.EndpointHostID != nil {
		spec.EndpointHostID = *req.EndpointHostID
		spec.Endpoint = sshdeck.TunnelHop{HostKey: spec.Endpoint.HostKey}
		creds.Endpoint = sshdeck.Credentials{}
	}
	return spec, creds
}

// hops returns the hops an attempt dials and their credentials: spec and
// creds themselves for a tunnel that references no host, or a copy with
// the referenced sides read from the store. forget is set for a host
// tunnel whose host or item is gone.
func (m *Manager) hops(ctx context.Context, owner, name string, spec *sshdeck.TunnelSpec, creds sshdeck.TunnelCredentials) (*sshdeck.TunnelSpec, sshdeck.TunnelCredentials, *failure) {
	if !spec.References() {
		return spec, creds, nil
	}
	req := ConnectRequest{SourceHostKey: spec.Source.HostKey, EndpointHostKey: spec.Endpoint.HostKey}
	if spec.SourceHostID != 0 {
		req.SourceHostID = &spec.SourceHostID
	}
	switch {
	case spec.EndpointHostID != 0:
		req.EndpointHostID = &spec.EndpointHostID
	case spec.EndpointHost != "":
		id, f := m.endpointHost(ctx, owner, spec.EndpointHost)
		if f != nil {
			return nil, creds, f
		}
		req.EndpointHostID, req.endpointRef = &id, fmt.Sprintf("endpointHost %q", spec.EndpointHost)
	}
	r, err := m.resolve(ctx, owner, &req)
	var gone *hostNotFound
	if spec.HostTunnel && errors.As(err, &gone) && gone.id == spec.SourceHostID {
		return nil, creds, forgotten(name, fmt.Sprintf("host %d is deleted", spec.SourceHostID))
	}
	if err != nil {
		return nil, creds, hostFailure(err)
	}
	if _, i, ok := sshdeck.ParseHostTunnelName(name); spec.HostTunnel && (!ok || i >= r.sourceItems) {
		return nil, creds, forgotten(name, fmt.Sprintf("host %d has no tunnelConnections[%d] any more", spec.SourceHostID, i))
	}
	out := *spec
	if spec.SourceHostID != 0 {
		if err := m.sourceRoute(r, &out, &creds); err != nil {
			return nil, creds, hostFailure(err)
		}
	}
	if r.EndpointHostID != nil {
		if out.Endpoint, creds.Endpoint, err = r.endpoint().parse(); err != nil {
			return nil, creds, hostFailure(err)
		}
	}
	return &out, creds, nil
}

// sourceRoute sets the source and its jump hosts of spec and creds from r,
// which resolve filled from a stored host, each checked as a request's
// fields are.
func (m *Manager) sourceRoute(r *ConnectRequest, spec *sshdeck.TunnelSpec, creds *sshdeck.TunnelCredentials) error {
	if len(r.Jumps) > m.opts.JumpLimit {
		return sshdeck.JumpHostsExceeded(m.opts.JumpLimit)
	}
	spec.Jumps, creds.Jumps = nil, nil
	if len(r.Jumps) > 0 {
		spec.Jumps, creds.Jumps = make([]sshdeck.TunnelHop, len(r.Jumps)), make([]sshdeck.Credentials, len(r.Jumps))
	}
	var err error
	for i := range r.Jumps {
		if spec.Jumps[i], creds.Jumps[i], err = r.Jumps[i].input(i).parse(); err != nil {
			return err
		}
	}
	spec.Source, creds.Source, err = r.source().parse()
	return err
}

// endpointHost finds the host a tunnelConnection's endpointHost names.
func (m *Manager) endpointHost(ctx context.Context, owner, ref string) (int64, *failure) {
	if m.opts.Hosts == nil {
		return 0, hostFailure(check.Invalid("endpointHost %q: this tunnel service reads no stored hosts", ref))
	}
	h, err := m.opts.Hosts.Find(ctx, owner, ref)
	switch code := sshdeck.ErrorCode(err); {
	case err == nil:
		return h.ID, nil
	case code == sshdeck.NotFound || code == sshdeck.Invalid:
		return 0, hostFailure(sshdeck.Errorf(code, "endpointHost %q: %s", ref, sshdeck.ErrorMessage(err)))
	}
	return 0, hostFailure(err)
}

// hostFailure is an attempt's failure to read or check its hosts: retried
// (the host may be saved or mended meanwhile), of class unknown (refs.go's
// doc), with the check's own words, which name the host and the field
// and never a credential. A store that did not answer is no words of ours.
func hostFailure(err error) *failure {
	switch sshdeck.ErrorCode(err) {
	case sshdeck.Invalid, sshdeck.LimitExceeded, sshdeck.TooLarge, sshdeck.NotFound, sshdeck.Denied:
		return fail(sshdeck.TunnelErrUnknown, true, err, "%s", sshdeck.ErrorMessage(err))
	}
	return fail(sshdeck.TunnelErrUnknown, true, err, "the tunnel's stored hosts could not be read")
}

// forgotten is the failure of a host tunnel whose item is gone: not
// retried, and the tunnel is deleted (Manager.ranOut).
func forgotten(name, why string) *failure {
	f := fail(sshdeck.TunnelErrUnknown, false, nil, "%s: tunnel %q is forgotten", why, name)
	f.forget = true
	return f
}

// onlyName reports whether the request holds a name and nothing else:
// the start of a host's tunnel whose autoStart is off.
func (req *ConnectRequest) onlyName() bool {
	rest := *req
	rest.Name = ""
	return reflect.ValueOf(rest).IsZero()
}

// startHostTunnel starts the owner's host tunnel name ("12:0"), as
// POST /ssh/tunnel/connect {"name": "12:0"} asks: Run set at a new
// generation, its spec as the host's save wrote it. A name that no host
// tunnel has is Invalid, as any request of a name alone is.
func (m *Manager) startHostTunnel(ctx context.Context, owner, name string) error {
	cur, err := m.store.Tunnel(ctx, owner, name)
	switch {
	case sshdeck.ErrorCode(err) == sshdeck.NotFound:
		return check.Invalid("name %q is no tunnel of yours: a host's tunnel is made by saving the host with tunnelConnections", name)
	case err != nil:
		return err
	case !cur.Spec.HostTunnel:
		return check.Invalid("name %q is no host's tunnel: connecting it again takes its fields", name)
	}
	t, err := m.write(ctx, owner, name, false, func(t *sshdeck.Tunnel) {
		t.Run = true
		t.Status = sshdeck.TunnelStatus{State: sshdeck.TunnelConnecting, Reason: "connection request received"}
	})
	if err != nil {
		return err
	}
	m.claim(t, sshdeck.TunnelCredentials{})
	return nil
}

// checkName refuses a name holding ':' in a request with fields: such
// names are hosts' tunnels' (sshdeck.HostTunnelName), which their host's
// saves write.
func checkName(name string) error {
	if strings.Contains(name, sshdeck.HostTunnelSep) {
		return check.Invalid("name %q holds ':', which only a host's tunnels' names (<host id>:<index>) hold; choose another, or send {\"name\": %q} alone to start a host's tunnel", name, name)
	}
	return nil
}

// hostTunnelGone reports whether a stopped host tunnel's host or item is
// gone. The sweep forgets stopped tunnels after ForgetAfter, but a host
// tunnel is its host's item: it lives as long as the host lists it (an
// item without autoStart waits, stopped, for a connect by name), and goes
// with the item. This is also how one whose host was deleted without its
// tunnels (a crash between the two writes, shared/hosts) goes in the end.
func (m *Manager) hostTunnelGone(t *sshdeck.Tunnel) bool {
	_, _, f := m.hops(m.loopCtx, t.Owner, t.Name, &t.Spec, sshdeck.TunnelCredentials{})
	return f != nil && f.forget
}

// forget deletes a host tunnel whose host or item is gone, at the
// generation it ran: a save of the host since (a new generation) keeps it.
func (m *Manager) forget(t *sshdeck.Tunnel, why string) {
	err := m.store.DeleteTunnel(m.runCtx, t.Owner, t.Name, t.Generation)
	switch code := sshdeck.ErrorCode(err); {
	case err == nil:
		m.log.Info("host tunnel forgotten", "owner", t.Owner, "tunnel", t.Name, "reason", why)
		m.notify(t.Owner)
	case code == sshdeck.NotFound || code == sshdeck.Conflict:
	default:
		m.log.Warn("cannot forget a host tunnel whose host is gone", "owner", t.Owner, "tunnel", t.Name, "error", err.Error())
	}
}
