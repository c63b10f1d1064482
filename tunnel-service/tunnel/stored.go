package tunnel

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/sshdeck/sshdeck/shared/check"
	"github.com/sshdeck/sshdeck/shared/hostchain"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// A connect request may name the caller's stored hosts instead of giving a
// side's fields (API.md, "Hosts as OpenSSH users keep them"):
// sourceHostId is the source, reached through the host's route of jump
// hosts; endpointHostId is the endpoint. The hosts are read with the
// caller as their owner, so another user's host reads as a missing one,
// word for word: "sourceHostId: host 7 not found". Credentials then never
// travel in the request.
//
// resolve fills the request's fields from the hosts, and parse checks them
// as it checks fields given inline, each error naming the host and the
// host's field ("sourceHostId: host 7: password is required when authType
// is password"); Connect checks their addresses against the denied ranges
// as it does any hop's. The tunnel's record keeps the references, not what
// was read (refs.go): no credential of a referenced side, and every
// attempt reads the hosts again, through the same resolve and checks, so
// that a host's new password or route is what the next attempt uses.
//
// A side given by id takes none of that side's address and credential
// fields (sourceIP, sourceSSHPort, sourceUsername, sourcePassword,
// sourceAuthMethod, sourceSSHKey, sourceKeyPassword, sourceKeyType; the
// endpoint's alike): 400 naming them. The host key pin (sourceHostKey,
// endpointHostKey) is no credential and may still be given: a stored host
// has none of its own.
//
// An endpoint is reached through the source, as ssh -J source endpoint
// reaches it: an endpoint host that has jump hosts of its own is 400,
// since the tunnel would not go the way the host says it is reached.

// Hosts reads the owner's stored hosts that a connect request names:
// *hostchain.Reader over the service's store and sealer, limited to
// JumpLimit hops.
type Hosts interface {
	// Route returns the owner's host id and the hosts it is reached
	// through, first hop first, credentials opened: NotFound when the
	// owner has no such host, Invalid or LimitExceeded naming the host
	// when its route cannot be followed.
	Route(ctx context.Context, owner string, id int64) (*hostchain.Host, []*hostchain.Host, error)
	// Find returns the owner's host a tunnelConnection's endpointHost
	// names, by id or else by name: NotFound when none, Invalid when the
	// name is several hosts'.
	Find(ctx context.Context, owner, ref string) (*sshdeck.Host, error)
}

// side is what resolve needs of a side of a request.
type side struct {
	idField string // sourceHostId
	id      *int64
	// given names the side's fields that the request holds.
	given []string
}

func (req *ConnectRequest) sourceSide() side {
	return side{cmp.Or(req.sourceRef, "sourceHostId"), req.SourceHostID, present(
		"sourceIP", req.SourceIP != "", "sourceSSHPort", req.SourceSSHPort != nil,
		"sourceUsername", req.SourceUsername != "", "sourcePassword", req.SourcePassword != "",
		"sourceAuthMethod", req.SourceAuthMethod != "", "sourceSSHKey", req.SourceSSHKey != "",
		"sourceKeyPassword", req.SourceKeyPassword != "", "sourceKeyType", req.SourceKeyType != nil,
	)}
}

func (req *ConnectRequest) endpointSide() side {
	return side{cmp.Or(req.endpointRef, "endpointHostId"), req.EndpointHostID, present(
		"endpointIP", req.EndpointIP != "", "endpointSSHPort", req.EndpointSSHPort != nil,
		"endpointUsername", req.EndpointUsername != "", "endpointPassword", req.EndpointPassword != "",
		"endpointAuthMethod", req.EndpointAuthMethod != "", "endpointSSHKey", req.EndpointSSHKey != "",
		"endpointKeyPassword", req.EndpointKeyPassword != "", "endpointKeyType", req.EndpointKeyType != nil,
	)}
}

// present returns the names (every other argument, a string) whose flag
// (the argument after it) is set.
func present(pairs ...any) []string {
	var out []string
	for i := 0; i < len(pairs); i += 2 {
		if pairs[i+1].(bool) {
			out = append(out, pairs[i].(string))
		}
	}
	return out
}

// resolve returns the request with the fields of the sides it gives by
// host id read from the owner's stored hosts, or req itself when it gives
// none. req is not changed: a caller may send it again.
func (m *Manager) resolve(ctx context.Context, owner string, req *ConnectRequest) (*ConnectRequest, error) {
	if req.SourceHostID == nil && req.EndpointHostID == nil {
		return req, nil
	}
	// Every conflict before any read: a request that cannot be valid
	// costs nothing.
	src, dst := req.sourceSide(), req.endpointSide()
	for _, s := range []side{src, dst} {
		if err := s.check(); err != nil {
			return nil, err
		}
	}
	if req.SourceHostID != nil && len(req.Jumps) > 0 {
		return nil, check.Invalid("jumps cannot be given with sourceHostId: the source's jump hosts are its stored route")
	}
	r := *req
	if s := src; s.id != nil {
		host, route, err := m.read(ctx, owner, s)
		if err != nil {
			return nil, err
		}
		from := fmt.Sprintf("%s: host %d", s.idField, host.ID)
		r.SourceIP, r.SourceSSHPort, r.SourceUsername, r.SourceAuthMethod, r.SourceKeyType = host.IP, port(host), host.Username, string(host.AuthType), keyType(host)
		r.SourcePassword, r.SourceSSHKey, r.SourceKeyPassword = host.Password, host.Key, host.KeyPassword
		r.sourceFrom, r.sourceID = from, host.ID
		r.sourceItems = len(host.TunnelConnections)
		r.Jumps = JumpsOf(route)
		for i := range r.Jumps {
			r.Jumps[i].from = fmt.Sprintf("%s: jump host %d (host %d)", from, i+1, route[i].ID)
		}
	}
	if s := dst; s.id != nil {
		host, route, err := m.read(ctx, owner, s)
		if err != nil {
			return nil, err
		}
		if len(route) > 0 {
			return nil, check.Invalid("%s: host %d is reached through jump hosts (%s), but a tunnel's endpoint is reached through its source: give an endpoint without jumpHosts", s.idField, host.ID, ids(route))
		}
		r.EndpointIP, r.EndpointSSHPort, r.EndpointUsername, r.EndpointAuthMethod, r.EndpointKeyType = host.IP, port(host), host.Username, string(host.AuthType), keyType(host)
		r.EndpointPassword, r.EndpointSSHKey, r.EndpointKeyPassword = host.Password, host.Key, host.KeyPassword
		r.endpointFrom, r.endpointID = fmt.Sprintf("%s: host %d", s.idField, host.ID), host.ID
	}
	return &r, nil
}

// check refuses a side given both by id and by fields, or by an id that
// no host can have.
func (s side) check() error {
	switch {
	case s.id == nil:
		return nil
	case len(s.given) > 0:
		return check.Invalid("%s cannot be given with %s: the stored host gives the address and credentials", list(s.given), s.idField)
	case *s.id <= 0:
		return check.Invalid("%s must be a positive integer (a host's id)", s.idField)
	}
	return nil
}

// read reads the side's host and its route. A host the owner does not
// have is Invalid: the request names it, whoever else may have it.
func (m *Manager) read(ctx context.Context, owner string, s side) (*hostchain.Host, []*hostchain.Host, error) {
	if m.opts.Hosts == nil {
		return nil, nil, check.Invalid("%s: this tunnel service reads no stored hosts", s.idField)
	}
	host, route, err := m.opts.Hosts.Route(ctx, owner, *s.id)
	switch code := sshdeck.ErrorCode(err); {
	case err == nil:
		return host, route, nil
	case code == sshdeck.NotFound:
		return nil, nil, &hostNotFound{check.Invalid("%s: host %d not found", s.idField, *s.id), *s.id}
	case code == sshdeck.Invalid || code == sshdeck.LimitExceeded:
		// The route's message names the host already: "host 7: …".
		return nil, nil, sshdeck.Errorf(code, "%s: %s", s.idField, sshdeck.ErrorMessage(err))
	}
	return nil, nil, err
}

// hostNotFound is read's error for a host the owner does not have:
// Invalid to a request, and to a host tunnel whose source it is, the sign
// that the tunnel is to be forgotten (refs.go).
type hostNotFound struct {
	err error // Invalid, naming the side and the host
	id  int64
}

func (e *hostNotFound) Error() string { return e.err.Error() }
func (e *hostNotFound) Unwrap() error { return e.err }

// port is a stored host's port as a request's: absent when unset.
func port(h *hostchain.Host) *int {
	if h.Port == 0 {
		return nil
	}
	p := h.Port
	return &p
}

func keyType(h *hostchain.Host) *string {
	if h.KeyType == "" {
		return nil
	}
	k := h.KeyType
	return &k
}

// list writes names as a sentence: a, b and c.
func list(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// ids writes a route's host ids: hosts 3 and 5.
func ids(route []*hostchain.Host) string {
	parts := make([]string, len(route))
	for i, h := range route {
		parts[i] = fmt.Sprint(h.ID)
	}
	if len(parts) == 1 {
		return "host " + parts[0]
	}
	return "hosts " + list(parts)
}
