// Command authorizer is the REQUEST authorizer of the REST API: it checks
// the bearer token of the Authorization header against DynamoDB and allows
// the caller, or makes API Gateway answer 401.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sshdeck/sshdeck/shared/lambdaapp"
)

func main() {
	authorizer, err := lambdaapp.Authorizer()
	if err != nil {
		lambdaapp.Fail(err)
	}
	lambda.Start(authorizer.Handle)
}
