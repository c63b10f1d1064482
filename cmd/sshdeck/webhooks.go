package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
	"github.com/sshdeck/sshdeck/shared/webhook"
)

// startWebhooks starts delivering the store's audit events to
// SSHDECK_WEBHOOK_URL, when it is set (shared/webhook), until ctx ends or
// stop is called; stop waits for the deliverer to return, so call it
// before the store closes. Webhooks are serve's alone: it is the one
// process of the embedded store that runs as long as its data; the admin
// commands write records and leave them to serve, and in AWS the events
// go to EventBridge.
func startWebhooks(ctx context.Context, cfg config.Config, store sshdeck.Store, log *slog.Logger) (stop func(), err error) {
	if cfg.WebhookURL == "" {
		return func() {}, nil
	}
	local, ok := store.(*embedded.Store)
	if !ok {
		return nil, errors.New(config.WebhookURL + ": webhooks are delivered from the embedded store (sshdeck serve) only")
	}
	d, err := webhook.New(ctx, local, webhook.Options{URL: cfg.WebhookURL, Secret: cfg.WebhookSecret, Log: log, Wake: local.AuditWritten()})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	return func() { cancel(); <-done }, nil
}
