package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/client"
	"github.com/sshdeck/sshdeck/internal/webhooktest"
	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
)

// TestServeDeliversWebhooksAcrossARestart: serve sends every audit record
// to SSHDECK_WEBHOOK_URL, signed (the receiver verifies each delivery),
// in commit order, each accepted once, though the receiver fails its
// first answers and is down while serve stops, records are written with
// no server running, and serve starts again.
func TestServeDeliversWebhooksAcrossARestart(t *testing.T) {
	const secret = "whsec-e2e-3c0f8b1e"
	recv := webhooktest.Start(t, secret, 2)
	t.Setenv(config.WebhookURL, recv.URL)
	t.Setenv(config.WebhookSecret, secret)
	dir := t.TempDir()

	srv := serve(t, dir)
	startLine := false
	for _, line := range srv.startLogs {
		startLine = startLine || strings.Contains(line, `"msg":"delivering audit events to the webhook","url":"`+recv.URL+`"`)
		if strings.Contains(line, secret) {
			t.Fatalf("serve logged the webhook's secret: %s", line)
		}
	}
	if !startLine {
		t.Fatalf("serve did not log the webhook's URL before serving:\n%s", strings.Join(srv.startLogs, "\n"))
	}
	admin := &client.Client{BaseURL: srv.url, TunnelURL: srv.tunnelURL, Token: srv.bootstrapToken(t)}
	host, err := admin.CreateHost(context.Background(), &hosts.Input{Name: "web", IP: "10.0.0.5", Username: "deploy"})
	if err != nil {
		t.Fatal(err)
	}
	recv.Down()
	if err := srv.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM", err)
	}

	// No server: records written to the store itself, as the admin
	// commands do when no serve runs.
	dbPath := filepath.Join(dir, ".sshdeck", "sshdeck.db")
	store, err := embedded.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	var offline []*sshdeck.AuditRecord
	for _, target := range []string{"offline 1", "offline 2", "offline 3"} {
		r := webhooktest.NewRecord(target)
		if err := store.PutAuditRecord(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		offline = append(offline, r)
	}
	store.Close()

	srv = serve(t, dir)
	recv.Up()
	// Deliveries are in commit order: the last record written is the last
	// to arrive.
	recv.WaitAccepted(t, offline[2].ID)
	if err := srv.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM", err)
	}

	if store, err = embedded.Open(dbPath); err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	entries, err := store.AuditStream(t.Context(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	var requestRecords int
	for _, e := range entries {
		stored = append(stored, e.Record.ID)
		if e.Record.Action == "create-host" && e.Record.Target == fmt.Sprintf("host %d", host.ID) {
			requestRecords++
		}
	}
	if got := recv.AcceptedIDs(); !slices.Equal(got, stored) {
		t.Fatalf("accepted %v,\nwant each stored record once, in commit order: %v", got, stored)
	}
	if got, want := recv.Attempts(), len(stored)+2; got != want {
		t.Fatalf("the receiver got %d deliveries, want its 2 failures and one per record", got)
	}
	if cursor, _, err := store.AuditCursor(t.Context()); err != nil || cursor != entries[len(entries)-1].Seq {
		t.Fatalf("cursor %d (%v), want the last record's %d", cursor, err, entries[len(entries)-1].Seq)
	}
	if requestRecords != 1 {
		t.Fatalf("POST /ssh/db/host wrote %d audit records, want one", requestRecords)
	}
}
