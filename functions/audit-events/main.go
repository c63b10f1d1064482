// Command audit-events is the consumer of the table's DynamoDB stream: it
// puts each audit record the table gains on the deployment's EventBridge
// bus (shared/auditevents), reporting the first record it could not send
// so that Lambda retries from there. It links no handler, store or key:
// auditapp.AuditEvents builds it from its settings alone.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sshdeck/sshdeck/shared/app"
	"github.com/sshdeck/sshdeck/shared/app/auditapp"
)

func main() {
	publisher, err := auditapp.AuditEvents(context.Background())
	if err != nil {
		app.Fail(err)
	}
	lambda.Start(publisher.Handle)
}
