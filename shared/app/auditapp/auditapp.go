// Package auditapp wires the consumer of the table's stream
// (functions/audit-events) from its settings, as shared/app wires every
// other binary. It is a package of its own so that no other function links
// the EventBridge client (some 260 KB of every bootstrap).
package auditapp

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/sshdeck/sshdeck/shared/app"
	"github.com/sshdeck/sshdeck/shared/auditevents"
	"github.com/sshdeck/sshdeck/shared/config"
)

// AuditEvents builds the consumer of the table's stream: the audit records
// the stream inserts go to the EventBridge bus of SSHDECK_EVENT_BUS. It
// reads the records from the stream's events, so it opens no table, key or
// store; its role may put events on that bus and read the stream, nothing
// else.
func AuditEvents(ctx context.Context) (*auditevents.Publisher, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return nil, err
	}
	if cfg.EventBus == "" {
		return nil, config.Missing(config.EventBus, "name the EventBridge bus that audit records go to (the CDK stack sets it)")
	}
	awsCfg, err := app.LambdaAWS(cfg)
	if err != nil {
		return nil, err
	}
	client := eventbridge.NewFromConfig(awsCfg, func(o *eventbridge.Options) {
		if cfg.AWS.EventBridgeEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.AWS.EventBridgeEndpoint)
		}
	})
	return &auditevents.Publisher{Events: client, Bus: cfg.EventBus, Log: app.LambdaLog()}, nil
}
