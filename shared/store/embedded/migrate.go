package embedded

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// migrateHosts rewrites every host of a schema 1 to 3 file from JSON
// (schema3Host) to the binary hostRecord. It runs in the transaction that
// opens the file and records schema 4, so a file is either all JSON at its
// old schema or all binary at schema 4, whatever crashes in between.
func migrateHosts(tx *bolt.Tx) error {
	hosts := tx.Bucket(bucketHosts)
	return hosts.ForEachBucket(func(owner []byte) error {
		b := hosts.Bucket(owner)
		// Collected first: a cursor may not walk a bucket that is being
		// written. The keys are copied: a write may remap the file, and
		// with it the memory they point into.
		var keys, values [][]byte
		err := b.ForEach(func(k, v []byte) error {
			if v == nil {
				return nil
			}
			var old schema3Host
			if err := json.Unmarshal(v, &old); err != nil {
				// Not json's message: it may quote the value.
				return fmt.Errorf("host %x of owner %q is not the JSON of schema 3", k, owner)
			}
			keys = append(keys, append([]byte(nil), k...))
			values = append(values, old.record().appendTo(nil))
			return nil
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

// schema3Host is a host as schemas 1 to 3 stored it: the JSON that
// sshdeck.Host marshalled to then, its names frozen here. Only the
// migration reads it.
type schema3Host struct {
	Owner             string                 `json:"owner"`
	ID                int64                  `json:"id"`
	Version           int64                  `json:"version"`
	Name              string                 `json:"name"`
	IP                string                 `json:"ip"`
	Port              int                    `json:"port"`
	Username          string                 `json:"username"`
	Folder            string                 `json:"folder"`
	Tags              []string               `json:"tags"`
	Pin               bool                   `json:"pin"`
	AuthType          string                 `json:"authType"`
	KeyType           string                 `json:"keyType"`
	EnableTerminal    bool                   `json:"enableTerminal"`
	EnableTunnel      bool                   `json:"enableTunnel"`
	EnableFileManager bool                   `json:"enableFileManager"`
	DefaultPath       string                 `json:"defaultPath"`
	TunnelConnections []schema3HostTunnel    `json:"tunnelConnections"`
	Sealed            schema3SealedHostCreds `json:"sealed"`
	CreatedAt         time.Time              `json:"createdAt"`
	UpdatedAt         time.Time              `json:"updatedAt"`
}

type schema3HostTunnel struct {
	SourcePort    int    `json:"sourcePort"`
	EndpointPort  int    `json:"endpointPort"`
	EndpointHost  string `json:"endpointHost"`
	MaxRetries    int    `json:"maxRetries"`
	RetryInterval int    `json:"retryInterval"`
	AutoStart     bool   `json:"autoStart"`
}

// schema3SealedHostCreds are base64, an empty one left out.
type schema3SealedHostCreds struct {
	Password    []byte `json:"password,omitempty"`
	Key         []byte `json:"key,omitempty"`
	KeyPassword []byte `json:"keyPassword,omitempty"`
}

func (h *schema3Host) record() *hostRecord {
	r := &hostRecord{
		owner:       h.Owner,
		id:          h.ID,
		version:     h.Version,
		name:        h.Name,
		ip:          h.IP,
		port:        h.Port,
		username:    h.Username,
		folder:      h.Folder,
		tags:        h.Tags,
		pin:         h.Pin,
		terminal:    h.EnableTerminal,
		tunnel:      h.EnableTunnel,
		fileManager: h.EnableFileManager,
		authType:    h.AuthType,
		keyType:     h.KeyType,
		defaultPath: h.DefaultPath,
		password:    h.Sealed.Password,
		key:         h.Sealed.Key,
		keyPassword: h.Sealed.KeyPassword,
		createdAt:   h.CreatedAt,
		updatedAt:   h.UpdatedAt,
	}
	for _, t := range h.TunnelConnections {
		r.tunnels = append(r.tunnels, hostTunnelRecord{
			sourcePort:    t.SourcePort,
			endpointPort:  t.EndpointPort,
			endpointHost:  t.EndpointHost,
			maxRetries:    t.MaxRetries,
			retryInterval: t.RetryInterval,
			autoStart:     t.AutoStart,
		})
	}
	return r
}
