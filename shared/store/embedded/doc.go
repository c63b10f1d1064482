// Package embedded is the local store of sshdeck: one bbolt file, used by
// `sshdeck serve` and the admin CLI. bbolt takes an exclusive lock on the
// file, so only one process uses a store at a time.
//
// Every method is one bbolt transaction, so each write is atomic, and bbolt
// fsyncs on commit: a write that returned nil survives a crash.
//
// On-disk layout (schema 3; schema 1 lacked files, alerts, dismissals and
// cache, schema 2 tunnels and known_hosts, which opening an older file adds):
//
//	meta                 "schema" → "3" (decimal); a newer schema is refused
//	users                user id → JSON sshdeck.User
//	usernames            user name → user id
//	tokens               token id → JSON sshdeck.Token
//	token_hashes         token hash → token id
//	hosts                one nested bucket per owner id:
//	  <owner id>         8-byte big-endian host id → JSON sshdeck.Host
//	                     the bucket's sequence is the owner's last host id
//	files                one nested bucket per owner id:
//	  <owner id>         8-byte host id + 'r' (recent) or 's' (shortcut) + path
//	                     → JSON sshdeck.FileEntry
//	alerts               alert id → JSON sshdeck.Alert
//	dismissals           one nested bucket per user id:
//	  <user id>          alert id → JSON sshdeck.Dismissal
//	cache                cache key → JSON sshdeck.CacheEntry
//	tunnels              one nested bucket per owner id:
//	  <owner id>         tunnel name → JSON sshdeck.Tunnel, lease included
//	known_hosts          one nested bucket per owner id:
//	  <owner id>         address ("10.0.0.5:22") → JSON sshdeck.KnownHost
//
// Host keys are big-endian so that a cursor walks them in id order, and a
// host's file entries, and each kind of them, are one key range. Alerts,
// dismissals and cache entries past their time are deleted by the writes of
// their kind (nothing else purges an embedded store), so those buckets hold
// little more than what is in force.
//
// A tunnel name is a key as it is, whatever its characters: the owner is
// the bucket, not a prefix, so no name can reach into another owner's
// tunnels, and RunnableTunnels walks the owners' buckets in key order and
// each one's names in theirs.
//
// The per-owner bucket of hosts is kept when its last host is deleted: its
// sequence is what keeps host ids from being reused.
package embedded
