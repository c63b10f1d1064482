// Package embedded is the local store of sshdeck: one bbolt file, used by
// `sshdeck serve` and the admin CLI. bbolt takes an exclusive lock on the
// file, so only one process uses a store at a time.
//
// Every method is one bbolt transaction, so each write is atomic, and bbolt
// fsyncs on commit: a write that returned nil survives a crash.
//
// On-disk layout (schema 1):
//
//	meta                 "schema" → "1" (decimal); a newer schema is refused
//	users                user id → JSON sshdeck.User
//	usernames            user name → user id
//	tokens               token id → JSON sshdeck.Token
//	token_hashes         token hash → token id
//	hosts                one nested bucket per owner id:
//	  <owner id>         8-byte big-endian host id → JSON sshdeck.Host
//	                     the bucket's sequence is the owner's last host id
//
// Host keys are big-endian so that a cursor walks them in id order. The
// per-owner bucket is kept when its last host is deleted: its sequence is what
// keeps host ids from being reused.
package embedded
