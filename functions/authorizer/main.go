// Command authorizer is the REQUEST authorizer of the REST API: it checks
// the bearer token of the Authorization header against DynamoDB and allows
// the caller, or makes API Gateway answer 401. It links the store and the
// authenticator only (shared/app), no handler of the API.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sshdeck/sshdeck/shared/app"
)

func main() {
	authorizer, err := app.Authorizer(context.Background())
	if err != nil {
		app.Fail(err)
	}
	lambda.Start(authorizer.Handle)
}
