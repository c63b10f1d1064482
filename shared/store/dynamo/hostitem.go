package dynamo

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// attrVersion is sshdeck.Host's version, the guard of its writes, and
// sshdeck.LoginSecrets' (PutLoginSecrets).
const attrVersion = "version"

// hostAttrs is a host as stored, by hand rather than by reflection: a list
// decodes a page of up to 1000 of them (BenchmarkDecodeHosts). Numbers are
// N, flags BOOL, times stamps (S); tags is an L of S, tunnelConnections an
// L of M, jumpHosts an L of N (host ids, first hop first), sealed an M of
// B (sealedAttrs), identityFile S. An empty list, map or binary, and an
// empty identityFile, is left out.
func hostAttrs(h *sshdeck.Host) map[string]types.AttributeValue {
	a := newAttrs(22)
	a["owner"] = str(h.Owner)
	a["id"] = num(h.ID)
	a[attrVersion] = num(h.Version)
	a["name"] = str(h.Name)
	a["ip"] = str(h.IP)
	a["port"] = num(int64(h.Port))
	a["username"] = str(h.Username)
	a["folder"] = str(h.Folder)
	putStrings(a, "tags", h.Tags)
	a["pin"] = boolean(h.Pin)
	a["authType"] = str(string(h.AuthType))
	a["keyType"] = str(h.KeyType)
	a["enableTerminal"] = boolean(h.EnableTerminal)
	a["enableTunnel"] = boolean(h.EnableTunnel)
	a["enableFileManager"] = boolean(h.EnableFileManager)
	a["defaultPath"] = str(h.DefaultPath)
	putMaps(a, "tunnelConnections", h.TunnelConnections, tunnelConnectionAttrs)
	putJumpHosts(a, h.JumpHosts)
	if h.IdentityFile != "" {
		a["identityFile"] = str(h.IdentityFile)
	}
	putMap(a, "sealed", sealedAttrs(&h.Sealed))
	putTime(a, "createdAt", h.CreatedAt)
	putTime(a, "updatedAt", h.UpdatedAt)
	return a
}

// decodeHost reads the item of hostAttrs, of either schema version: 1 wrote
// nil tags and tunnelConnections as NULL, which fields reads as absent.
// jumpHosts and identityFile were added within version 2: an item without
// them (every item written before them) has none, which is what their
// absence means.
func decodeHost(item map[string]types.AttributeValue) (*sshdeck.Host, error) {
	f, d := decode(item)
	h := &sshdeck.Host{
		Owner:   f.str("owner"),
		ID:      f.int64("id"),
		Version: f.int64(attrVersion),
		HostConfig: sshdeck.HostConfig{
			Name:              f.str("name"),
			IP:                f.str("ip"),
			Port:              f.int("port"),
			Username:          f.str("username"),
			Folder:            f.str("folder"),
			Tags:              f.strings("tags"),
			Pin:               f.bool("pin"),
			AuthType:          sshdeck.AuthType(f.str("authType")),
			KeyType:           f.str("keyType"),
			EnableTerminal:    f.bool("enableTerminal"),
			EnableTunnel:      f.bool("enableTunnel"),
			EnableFileManager: f.bool("enableFileManager"),
			DefaultPath:       f.str("defaultPath"),
			TunnelConnections: listOfMaps(f, "tunnelConnections", decodeTunnelConnection),
			JumpHosts:         decodeJumpHosts(f),
			IdentityFile:      f.str("identityFile"),
		},
		Sealed:    decodeSealed(f.nested("sealed")),
		CreatedAt: f.time("createdAt"),
		UpdatedAt: f.time("updatedAt"),
	}
	return decoded(h, d, "host")
}

// tunnelConnectionAttrs is an element of a host's tunnelConnections, every
// attribute present: sourcePort, endpointPort, maxRetries, retryInterval
// (seconds) as N, endpointHost S, autoStart BOOL.
func tunnelConnectionAttrs(c *sshdeck.TunnelConnection) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"sourcePort":    num(int64(c.SourcePort)),
		"endpointPort":  num(int64(c.EndpointPort)),
		"endpointHost":  str(c.EndpointHost),
		"maxRetries":    num(int64(c.MaxRetries)),
		"retryInterval": num(int64(c.RetryInterval)),
		"autoStart":     boolean(c.AutoStart),
	}
}

func decodeTunnelConnection(f fields) sshdeck.TunnelConnection {
	return sshdeck.TunnelConnection{
		SourcePort:    f.int("sourcePort"),
		EndpointPort:  f.int("endpointPort"),
		EndpointHost:  f.str("endpointHost"),
		MaxRetries:    f.int("maxRetries"),
		RetryInterval: f.int("retryInterval"),
		AutoStart:     f.bool("autoStart"),
	}
}

// putJumpHosts sets a host's jumpHosts, an L of N (the hops' host ids in
// the chain's order), leaving an empty list out.
func putJumpHosts(a map[string]types.AttributeValue, hops []sshdeck.JumpHost) {
	if len(hops) == 0 {
		return
	}
	l := make([]types.AttributeValue, len(hops))
	for i, hop := range hops {
		l[i] = num(hop.HostID)
	}
	a["jumpHosts"] = &types.AttributeValueMemberL{Value: l}
}

func decodeJumpHosts(f fields) []sshdeck.JumpHost {
	return listOf(f, "jumpHosts", "a list of host ids", func(n *types.AttributeValueMemberN) sshdeck.JumpHost {
		id, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			f.fail("jumpHosts", "a list of host ids")
		}
		return sshdeck.JumpHost{HostID: id}
	})
}

// sealedAttrs is a host's or a tunnel hop's sealed credentials: password,
// key and keyPassword as B, each absent when empty (none is stored in
// plaintext: the store only ever receives sealed ones).
func sealedAttrs(c *sshdeck.SealedCredentials) map[string]types.AttributeValue {
	a := make(map[string]types.AttributeValue, 3)
	putBytes(a, "password", c.Password)
	putBytes(a, "key", c.Key)
	putBytes(a, "keyPassword", c.KeyPassword)
	return a
}

func decodeSealed(f fields) sshdeck.SealedCredentials {
	return sshdeck.SealedCredentials{
		Password:    f.bytes("password"),
		Key:         f.bytes("key"),
		KeyPassword: f.bytes("keyPassword"),
	}
}
