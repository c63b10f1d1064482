package embedded

import (
	"encoding/json"

	bolt "go.etcd.io/bbolt"
)

// hostsToJSON rewrites the hosts of a file in the JSON of schema 3, as
// sshdeck before schema 4 left them: the inverse of migrateHosts, for
// tests that make an older file out of a new one.
func hostsToJSON(tx *bolt.Tx) error {
	hosts := tx.Bucket(bucketHosts)
	return hosts.ForEachBucket(func(owner []byte) error {
		b := hosts.Bucket(owner)
		var keys, values [][]byte
		err := b.ForEach(func(k, v []byte) error {
			var r hostRecord
			if err := r.decode(v); err != nil {
				return err
			}
			data, err := json.Marshal(schema3HostOf(&r))
			keys, values = append(keys, append([]byte(nil), k...)), append(values, data)
			return err
		})
		if err != nil {
			return err
		}
		for i, k := range keys {
			if err := b.Put(k, values[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

func schema3HostOf(r *hostRecord) *schema3Host {
	h := &schema3Host{
		Owner:             r.owner,
		ID:                r.id,
		Version:           r.version,
		Name:              r.name,
		IP:                r.ip,
		Port:              r.port,
		Username:          r.username,
		Folder:            r.folder,
		Tags:              r.tags,
		Pin:               r.pin,
		AuthType:          r.authType,
		KeyType:           r.keyType,
		EnableTerminal:    r.terminal,
		EnableTunnel:      r.tunnel,
		EnableFileManager: r.fileManager,
		DefaultPath:       r.defaultPath,
		Sealed:            schema3SealedHostCreds{Password: r.password, Key: r.key, KeyPassword: r.keyPassword},
		CreatedAt:         r.createdAt,
		UpdatedAt:         r.updatedAt,
	}
	for _, t := range r.tunnels {
		h.TunnelConnections = append(h.TunnelConnections, schema3HostTunnel{
			SourcePort:    t.sourcePort,
			EndpointPort:  t.endpointPort,
			EndpointHost:  t.endpointHost,
			MaxRetries:    t.maxRetries,
			RetryInterval: t.retryInterval,
			AutoStart:     t.autoStart,
		})
	}
	return h
}
