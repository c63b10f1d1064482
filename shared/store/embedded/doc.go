// Package embedded is the local store of sshdeck: one bbolt file, used by
// `sshdeck serve` and the admin CLI. bbolt takes an exclusive lock on the
// file, so only one process uses a store at a time.
//
// Every method is one bbolt transaction, so each write is atomic, and bbolt
// fsyncs on commit: a write that returned nil survives a crash.
//
// On-disk layout (schema 8):
//
//	meta                 "schema" → "8" (decimal); a newer schema is refused;
//	                     "audit_cursor" → 8-byte sequence the webhooks delivered
//	                     (absent: webhooks were never configured)
//	users                user id → JSON userRecord
//	usernames            user name → user id
//	tokens               token id → JSON tokenRecord
//	token_hashes         token hash → token id
//	hosts                one nested bucket per owner id:
//	  <owner id>         8-byte big-endian host id → binary hostRecord
//	                     the bucket's sequence is the owner's last host id
//	files                one nested bucket per owner id:
//	  <owner id>         8-byte host id + 'r' (recent) or 's' (shortcut) + path
//	                     → JSON fileRecord
//	alerts               alert id → JSON alertRecord
//	dismissals           one nested bucket per user id:
//	  <user id>          alert id → JSON dismissalRecord
//	cache                cache key → JSON cacheRecord
//	tunnels              one nested bucket per owner id:
//	  <owner id>         tunnel name → JSON tunnelRecord, lease included
//	known_hosts          one nested bucket per owner id:
//	  <owner id>         address ("10.0.0.5:22") → JSON knownHostRecord
//	login_secrets        user id → JSON loginSecretsRecord (TOTP sealed)
//	login_failures       failure key ("name:…", "addr:…") → JSON failureRecord
//	audit                8-byte big-endian sequence (commit order) → JSON auditRecord
//	audit_time           8-byte Unix nanoseconds + id → sequence + 8-byte expiry (Unix nanoseconds)
//	audit_actor          actor + 0x00 + 8-byte Unix nanoseconds + id → sequence
//
// Values are records of this package's own types, each mapped from and to
// its sshdeck type by hand in the file of its kind (userRecordOf and
// userRecord.user, and so on), so that what is on disk changes only when
// this package says so, never with a field of the API. The JSON records'
// tags are the names sshdeck.User and the others had when each kind was
// added, frozen. A host is binary (hosts.go: hostRecord.appendTo, and the
// primitives in binary.go): a format byte (3), then its fields in a fixed
// order, with no names; its times keep the instant, not the zone, and come
// back in UTC. Format 1, written by schemas 4 and 5, lacked the jump hosts
// (a list after the tunnels), format 2, written by schema 6, lacked the
// identity file (a string after the jump hosts); both are still read, as a
// host without them, and become format 3 when the host is next written. Decoding the JSON was most of the CPU of listing
// hosts; BenchmarkHosts lists 1000 in 0.42 ms instead of 6.2 ms, with 6
// allocations a host instead of 35. testdata/golden pins the bytes of a
// host and of every other kind's record.
//
// Older files are migrated by Open, in its one transaction (prepare, in
// store.go): schema 1 lacked files, alerts, dismissals and cache, schema 2
// tunnels and known_hosts, schema 4 login_secrets and login_failures, which
// creating the missing buckets adds (schema 5's token records gained
// scopes and lastUsedAt, absent from older ones, which read as before); schemas
// 1 to 3 stored hosts as JSON (migrate.go's schema3Host), which
// migrateHosts rewrites in binary before schema 4 is recorded. Schema 6
// writes hosts in format 2 and reads format 1, so opening a schema 4 or 5
// file only records 6, which keeps an older sshdeck (that cannot read
// format 2) from opening it; schema 7 writes format 3 and records 7 on
// opening a schema 4 to 6 file for the same reason; schema 8 only adds the
// audit buckets, and records 8 so that an older sshdeck, which would write
// changes without their audit records, does not open the file. The other kinds' values did not change, but
// for a tunnel's jump hosts (spec.jumps and sealed.jumps, added within
// schema 6 and left out when empty, so that every record without them
// reads as before, a tunnel whose source is dialled directly) and a
// tunnel hop's hostId (the stored host it was read from, left out when
// 0: a hop given inline, as every hop before it was). An older
// sshdeck reads a tunnel with them and ignores them; it cannot run it
// anyway, since the engine seals the credentials of a source behind jump
// hosts under another role than a direct source's (tunnel-service's
// seal.go), so it fails the tunnel rather than dial the source directly.
// testdata/schema3 is a data directory that
// sshdeck wrote at schema 3, with the script that made it; TestSchema3Fixture
// opens it.
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
//
// Limits (config.Limits) are counted in the transaction of the write, so
// that concurrent writes, which bbolt serializes, never pass one: CreateHost
// counts the owner's host keys (only once the bucket's sequence reaches the
// limit: every host has its own id, none past the sequence, so below it
// fewer hosts exist), AddShortcut the host's shortcut keys. No count is
// stored, so the layout is unchanged.
package embedded
