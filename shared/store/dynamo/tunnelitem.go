package dynamo

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Attributes of a tunnel item that the writes and conditions name.
const (
	attrGeneration = "generation"
	attrRun        = "run"
	attrStatus     = "status"
	attrSealed     = "sealed"
	attrUpdatedAt  = "updatedAt"
	// The lease is not a map of the item but these two attributes, which
	// only the lease methods write: PutTunnel leaves them alone, and the
	// lease's conditions compare plain values, the time as fixed-width text
	// (sortableTime).
	attrLeaseHolder = "leaseHolder"
	attrLeaseUntil  = "leaseUntil"
)

// tunnelAttrs is a tunnel as stored but its lease: owner, name (S),
// generation (N), run (BOOL), spec and status (M: specAttrs, statusAttrs),
// sealed (M of source and endpoint, each sealedAttrs, and jumps, an L of
// sealedAttrs, one per spec.jumps, absent when there are none; sealed is
// absent when all are empty), createdAt and updatedAt (S, stamps).
func tunnelAttrs(t *sshdeck.Tunnel) map[string]types.AttributeValue {
	a := newAttrs(9)
	a["owner"] = str(t.Owner)
	a["name"] = str(t.Name)
	a[attrGeneration] = num(t.Generation)
	a["spec"] = &types.AttributeValueMemberM{Value: specAttrs(&t.Spec)}
	sealed := make(map[string]types.AttributeValue, 3)
	putSealedJumps(sealed, t.Sealed.Jumps)
	putMap(sealed, "source", sealedAttrs(&t.Sealed.Source))
	putMap(sealed, "endpoint", sealedAttrs(&t.Sealed.Endpoint))
	putMap(a, attrSealed, sealed)
	a[attrRun] = boolean(t.Run)
	a[attrStatus] = &types.AttributeValueMemberM{Value: statusAttrs(&t.Status)}
	putTime(a, attrCreatedAt, t.CreatedAt)
	putTime(a, attrUpdatedAt, t.UpdatedAt)
	return a
}

// decodeTunnel reads a whole tunnel item, of any schema version (tunnels
// are the same in 1 and 2), with its lease: a holder of "" (released) or
// none (never leased) is a free lease.
func decodeTunnel(item map[string]types.AttributeValue) (*sshdeck.Tunnel, error) {
	f, d := decode(item)
	sealed := f.nested(attrSealed)
	t := &sshdeck.Tunnel{
		Owner:      f.str("owner"),
		Name:       f.str("name"),
		Generation: f.int64(attrGeneration),
		Spec:       decodeSpec(f.nested("spec")),
		Sealed: sshdeck.SealedTunnelCredentials{
			Jumps:    decodeSealedJumps(sealed),
			Source:   decodeSealed(sealed.nested("source")),
			Endpoint: decodeSealed(sealed.nested("endpoint")),
		},
		Run:       f.bool(attrRun),
		Status:    decodeStatus(f.nested(attrStatus)),
		Lease:     sshdeck.TunnelLease{Holder: f.str(attrLeaseHolder)},
		CreatedAt: f.time(attrCreatedAt),
		UpdatedAt: f.time(attrUpdatedAt),
	}
	if until := f.str(attrLeaseUntil); until != "" {
		var err error
		if t.Lease.Until, err = time.Parse(sortableTimeLayout, until); err != nil {
			f.fail(attrLeaseUntil, "a fixed-width UTC time")
		}
	}
	return decoded(t, d, "tunnel")
}

// putSealedJumps sets the sealed credentials of a tunnel's jump hosts, an
// L with one element per hop in the spec's order: sealedAttrs, or NULL for
// a hop without any (never an empty M, which minidyn, the tests'
// DynamoDB, turns into NULL and then mangles within a list). An empty list
// is left out.
func putSealedJumps(a map[string]types.AttributeValue, jumps []sshdeck.SealedCredentials) {
	if len(jumps) == 0 {
		return
	}
	l := make([]types.AttributeValue, len(jumps))
	for i := range jumps {
		if m := sealedAttrs(&jumps[i]); len(m) > 0 {
			l[i] = &types.AttributeValueMemberM{Value: m}
		} else {
			l[i] = &types.AttributeValueMemberNULL{Value: true}
		}
	}
	a["jumps"] = &types.AttributeValueMemberL{Value: l}
}

func decodeSealedJumps(f fields) []sshdeck.SealedCredentials {
	return listOf(f, "jumps", "a list of maps", func(v types.AttributeValue) sshdeck.SealedCredentials {
		switch v := v.(type) {
		case *types.AttributeValueMemberM:
			return decodeSealed(fields{m: v.Value, d: f.d})
		case *types.AttributeValueMemberNULL:
			return sshdeck.SealedCredentials{}
		}
		f.fail("jumps", "a list of maps")
		return sshdeck.SealedCredentials{}
	})
}

// specAttrs is a tunnel's spec: hostName (S), source and endpoint (M,
// hopAttrs), jumps (L of M, hopAttrs, first hop first; absent when there
// are none), sourcePort, endpointPort, maxRetries (N), retryInterval (N,
// nanoseconds), autoStart, isPinned (BOOL), and the references to stored
// hosts, each absent when unset: sourceHostId, endpointHostId (N),
// endpointHost (S), hostTunnel (BOOL; added within version 2, so their
// absence means a spec that holds every hop, as every one before them),
// and mode (S, absent for relay: added within version 2, so its absence
// means what it always did).
func specAttrs(s *sshdeck.TunnelSpec) map[string]types.AttributeValue {
	a := map[string]types.AttributeValue{
		"hostName":      str(s.HostName),
		"source":        &types.AttributeValueMemberM{Value: hopAttrs(&s.Source)},
		"endpoint":      &types.AttributeValueMemberM{Value: hopAttrs(&s.Endpoint)},
		"sourcePort":    num(int64(s.SourcePort)),
		"endpointPort":  num(int64(s.EndpointPort)),
		"maxRetries":    num(int64(s.MaxRetries)),
		"retryInterval": num(int64(s.RetryInterval)),
		"autoStart":     boolean(s.AutoStart),
		"isPinned":      boolean(s.IsPinned),
	}
	putMaps(a, "jumps", s.Jumps, hopAttrs)
	if s.SourceHostID != 0 {
		a["sourceHostId"] = num(s.SourceHostID)
	}
	if s.EndpointHostID != 0 {
		a["endpointHostId"] = num(s.EndpointHostID)
	}
	if s.EndpointHost != "" {
		a["endpointHost"] = str(s.EndpointHost)
	}
	if s.HostTunnel {
		a["hostTunnel"] = boolean(true)
	}
	if s.Mode != "" {
		a["mode"] = str(string(s.Mode))
	}
	return a
}

// decodeSpec reads specAttrs. jumps was added within version 2: a spec
// without it (every one written before it) is of a tunnel whose source is
// dialled directly, which is what its absence means.
func decodeSpec(f fields) sshdeck.TunnelSpec {
	return sshdeck.TunnelSpec{
		HostName:       f.str("hostName"),
		Jumps:          listOfMaps(f, "jumps", decodeHop),
		Source:         decodeHop(f.nested("source")),
		Endpoint:       decodeHop(f.nested("endpoint")),
		SourcePort:     f.int("sourcePort"),
		EndpointPort:   f.int("endpointPort"),
		MaxRetries:     f.int("maxRetries"),
		RetryInterval:  time.Duration(f.int64("retryInterval")),
		AutoStart:      f.bool("autoStart"),
		IsPinned:       f.bool("isPinned"),
		SourceHostID:   f.int64("sourceHostId"),
		EndpointHostID: f.int64("endpointHostId"),
		EndpointHost:   f.str("endpointHost"),
		HostTunnel:     f.bool("hostTunnel"),
		Mode:           sshdeck.TunnelMode(f.str("mode")),
	}
}

// hopAttrs is a hop of a tunnel's spec: ip, username, authMethod, keyType
// (S), sshPort (N), hostKey (S, absent when empty: no key pinned), hostId
// (N, the stored host it was read from, absent when the request gave the
// hop inline; added within version 2, so its absence means what it
// always did).
func hopAttrs(h *sshdeck.TunnelHop) map[string]types.AttributeValue {
	a := map[string]types.AttributeValue{
		"ip":         str(h.IP),
		"sshPort":    num(int64(h.SSHPort)),
		"username":   str(h.Username),
		"authMethod": str(string(h.Auth)),
		"keyType":    str(h.KeyType),
	}
	if h.HostKey != "" {
		a["hostKey"] = str(h.HostKey)
	}
	if h.HostID != 0 {
		a["hostId"] = num(h.HostID)
	}
	return a
}

func decodeHop(f fields) sshdeck.TunnelHop {
	return sshdeck.TunnelHop{
		IP:       f.str("ip"),
		SSHPort:  f.int("sshPort"),
		Username: f.str("username"),
		Auth:     sshdeck.AuthType(f.str("authMethod")),
		KeyType:  f.str("keyType"),
		HostKey:  f.str("hostKey"),
		HostID:   f.int64("hostId"),
	}
}

// statusAttrs is a tunnel's status, which SetTunnelStatus writes alone:
// state, reason (S), retryCount (N), retryExhausted, manualDisconnect
// (BOOL), nextRetryAt and updatedAt (S, stamps, absent when zero),
// errorType (S, absent when empty), and its counters, each absent when
// zero: connectedAt (S, a stamp), bytesIn, bytesOut, activeConnections,
// reconnects (N), lastError (S) (added within version 2, so their absence
// means a status that counted nothing, as every one before them).
func statusAttrs(s *sshdeck.TunnelStatus) map[string]types.AttributeValue {
	a := map[string]types.AttributeValue{
		"state":            str(string(s.State)),
		"retryCount":       num(int64(s.RetryCount)),
		"reason":           str(s.Reason),
		"retryExhausted":   boolean(s.RetryExhausted),
		"manualDisconnect": boolean(s.ManualDisconnect),
	}
	putTime(a, "nextRetryAt", s.NextRetryAt)
	if s.Error != "" {
		a["errorType"] = str(string(s.Error))
	}
	putTime(a, "updatedAt", s.UpdatedAt)
	putTime(a, "connectedAt", s.ConnectedAt)
	putNum(a, "bytesIn", s.BytesIn)
	putNum(a, "bytesOut", s.BytesOut)
	putNum(a, "activeConnections", int64(s.ActiveConnections))
	putNum(a, "reconnects", int64(s.Reconnects))
	if s.LastError != "" {
		a["lastError"] = str(s.LastError)
	}
	return a
}

func decodeStatus(f fields) sshdeck.TunnelStatus {
	return sshdeck.TunnelStatus{
		State:             sshdeck.TunnelState(f.str("state")),
		RetryCount:        f.int("retryCount"),
		NextRetryAt:       f.time("nextRetryAt"),
		Reason:            f.str("reason"),
		Error:             sshdeck.TunnelError(f.str("errorType")),
		RetryExhausted:    f.bool("retryExhausted"),
		ManualDisconnect:  f.bool("manualDisconnect"),
		UpdatedAt:         f.time("updatedAt"),
		ConnectedAt:       f.time("connectedAt"),
		BytesIn:           f.int64("bytesIn"),
		BytesOut:          f.int64("bytesOut"),
		ActiveConnections: f.int("activeConnections"),
		Reconnects:        f.int("reconnects"),
		LastError:         f.str("lastError"),
	}
}

// knownHostAttrs is a known host as stored: owner, addr, key (S), createdAt
// (S, a stamp).
func knownHostAttrs(k *sshdeck.KnownHost) map[string]types.AttributeValue {
	a := newAttrs(4)
	a["owner"] = str(k.Owner)
	a["addr"] = str(k.Addr)
	a["key"] = str(k.Key)
	putTime(a, attrCreatedAt, k.CreatedAt)
	return a
}

// decodeKnownHost reads the item of knownHostAttrs, of any schema version:
// they are the same in 1 and 2.
func decodeKnownHost(item map[string]types.AttributeValue) (*sshdeck.KnownHost, error) {
	f, d := decode(item)
	k := &sshdeck.KnownHost{Owner: f.str("owner"), Addr: f.str("addr"), Key: f.str("key"), CreatedAt: f.time(attrCreatedAt)}
	return decoded(k, d, "known host")
}
