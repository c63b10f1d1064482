// Command echo is a Lambda function for the tests of runtimeapi, served by
// aws-lambda-go's runtime client: it answers what it was given and what the
// Runtime API told it; {"fail":"message"} makes it return an error,
// {"panic":"message"} makes it panic.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type answer struct {
	Event       json.RawMessage `json:"event"`
	RequestID   string          `json:"requestId"`
	FunctionARN string          `json:"functionArn"`
	DeadlineMS  int64           `json:"deadlineMs"`
	TraceID     string          `json:"traceId"`
}

func handle(ctx context.Context, event json.RawMessage) (answer, error) {
	var cmd struct{ Fail, Panic string }
	json.Unmarshal(event, &cmd)
	if cmd.Panic != "" {
		panic(cmd.Panic)
	}
	if cmd.Fail != "" {
		return answer{}, errors.New(cmd.Fail)
	}
	lc, _ := lambdacontext.FromContext(ctx)
	deadline, _ := ctx.Deadline()
	return answer{Event: event, RequestID: lc.AwsRequestID, FunctionARN: lc.InvokedFunctionArn,
		DeadlineMS: deadline.UnixMilli(), TraceID: os.Getenv("_X_AMZN_TRACE_ID")}, nil
}

func main() { lambda.Start(handle) }
