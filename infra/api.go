package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/sshdeck/sshdeck/shared/routes"
)

// stageName is the last segment of base_url.
const stageName = "v1"

// authorizerCacheTTL is how long API Gateway keeps the authorizer's answer
// for one Authorization header, in seconds. A warm authorizer container
// then answers from its own cache (auth.CacheTTL, 30 s) without reading the
// token: a revoked token, or a disabled user's, works at most the sum of
// the two, API.md's 60 s (TestAuthorizer holds them to it).
const authorizerCacheTTL = 30

// newAPI is the REST API: one method per route, each invoking its own
// function; every method but the public routes' (routes.Route.Public:
// /healthz, /auth/login) behind the REQUEST authorizer.
func newAPI(scope constructs.Construct, cfg Config, fns *Functions) awsapigateway.RestApi {
	accessLogs := awslogs.NewLogGroup(scope, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		Retention: retention(cfg.LogRetentionDays),
	})
	api := awsapigateway.NewRestApi(scope, jsii.String("Api"), &awsapigateway.RestApiProps{
		RestApiName:   jsii.String(cfg.StackName),
		Description:   jsii.String("sshdeck base_url API"),
		EndpointTypes: &[]awsapigateway.EndpointType{awsapigateway.EndpointType_REGIONAL},
		// Host bodies may be multipart/form-data with a key file: pass
		// them to the function byte for byte (base64), not as text.
		BinaryMediaTypes: jsii.Strings("multipart/form-data"),
		// API Gateway writes execution logs through an account-wide role;
		// this creates it (or takes it over) and keeps it after the stack.
		CloudWatchRole:              jsii.Bool(true),
		CloudWatchRoleRemovalPolicy: awscdk.RemovalPolicy_RETAIN,
		DeployOptions: &awsapigateway.StageOptions{
			StageName:            jsii.String(stageName),
			AccessLogDestination: awsapigateway.NewLogGroupLogDestination(accessLogs),
			AccessLogFormat: awsapigateway.AccessLogFormat_JsonWithStandardFields(&awsapigateway.JsonWithStandardFieldProps{
				Caller: jsii.Bool(false), HttpMethod: jsii.Bool(true), Ip: jsii.Bool(true),
				Protocol: jsii.Bool(true), RequestTime: jsii.Bool(true), ResourcePath: jsii.Bool(true),
				ResponseLength: jsii.Bool(true), Status: jsii.Bool(true), User: jsii.Bool(false),
			}),
			// Errors only, and never the bodies (dataTrace): a body can
			// hold a password or a private key.
			LoggingLevel:         awsapigateway.MethodLoggingLevel_ERROR,
			DataTraceEnabled:     jsii.Bool(false),
			MetricsEnabled:       jsii.Bool(true),
			TracingEnabled:       jsii.Bool(true),
			ThrottlingRateLimit:  jsii.Number(float64(cfg.ThrottleRate)),
			ThrottlingBurstLimit: jsii.Number(float64(cfg.ThrottleBurst)),
			MethodOptions:        loginThrottle(cfg),
		},
	})
	authorizer := awsapigateway.NewRequestAuthorizer(scope, jsii.String("TokenAuthorizer"), &awsapigateway.RequestAuthorizerProps{
		Handler:         fns.Authorizer,
		IdentitySources: jsii.Strings(*awsapigateway.IdentitySource_Header(jsii.String("Authorization"))),
		ResultsCacheTtl: awscdk.Duration_Seconds(jsii.Number(authorizerCacheTTL)),
	})
	for _, r := range routes.All {
		opts := &awsapigateway.MethodOptions{
			OperationName:     jsii.String(r.Name),
			Authorizer:        authorizer,
			AuthorizationType: awsapigateway.AuthorizationType_CUSTOM,
		}
		if r.Public {
			opts = &awsapigateway.MethodOptions{OperationName: jsii.String(r.Name), AuthorizationType: awsapigateway.AuthorizationType_NONE}
		}
		integration := &awsapigateway.LambdaIntegrationOptions{
			// Only the stage may invoke the function, not the console's
			// test button.
			AllowTestInvoke: jsii.Bool(false),
		}
		if r.Stream {
			// The answer streams (shared/lambdahttp.StreamHandler): API
			// Gateway invokes the function with InvokeWithResponseStream
			// (the integration URI's .../response-streaming-invocations,
			// which the same lambda:InvokeFunction permission allows) and
			// passes the answer on as it comes, past Lambda's 6 MB and API
			// Gateway's own 10 MB buffered limits, for as long as the
			// integration's timeout (up to 15 minutes when streaming).
			integration.ResponseTransferMode = awsapigateway.ResponseTransferMode_STREAM
			integration.Timeout = awscdk.Duration_Seconds(jsii.Number(streamTimeout))
		}
		api.Root().ResourceForPath(jsii.String(r.Path)).AddMethod(jsii.String(r.Method),
			awsapigateway.NewLambdaIntegration(fns.Routes[r.Name], integration), opts)
	}
	addGatewayResponses(api)
	return api
}

// loginThrottle gives POST /auth/login, the public route that checks
// passwords (each an argon2id hash, some 20 ms of CPU), a throttle of its
// own below the stage's: a method's settings replace the stage's for it,
// so it repeats the stage's logging and metrics (errors only, never a
// body, which here holds a password). The lockout (5 failures per user
// name, 20 per address, in 15 minutes) bounds the guesses at one account;
// this bounds what a flood of logins costs, over all callers. Its key is
// API Gateway's resource path and method, "/auth/login/POST".
func loginThrottle(cfg Config) *map[string]*awsapigateway.MethodDeploymentOptions {
	login, ok := routes.ByName("login")
	if !ok {
		panic("routes.All has no login route")
	}
	return &map[string]*awsapigateway.MethodDeploymentOptions{
		login.Path + "/" + login.Method: {
			ThrottlingRateLimit:  jsii.Number(float64(cfg.LoginThrottleRate)),
			ThrottlingBurstLimit: jsii.Number(float64(cfg.LoginThrottleBurst)),
			LoggingLevel:         awsapigateway.MethodLoggingLevel_ERROR,
			DataTraceEnabled:     jsii.Bool(false),
			MetricsEnabled:       jsii.Bool(true),
		},
	}
}

// addGatewayResponses makes the answers API Gateway gives on its own speak
// the contract: {"error": sentence, "code": code}. The authorizer's denial
// (UNAUTHORIZED: no or unknown token; ACCESS_DENIED: a Deny policy) is 401
// with WWW-Authenticate: Bearer, where API Gateway would say 401 or 403
// {"message": ...}.
func addGatewayResponses(api awsapigateway.RestApi) {
	unauthorized := `{"error":"a valid bearer token is required (Authorization: Bearer <token>)","code":"unauthorized"}`
	responses := []struct {
		id      string
		typ     awsapigateway.ResponseType
		status  string
		body    string
		headers map[string]string
	}{
		{"Unauthorized", awsapigateway.ResponseType_UNAUTHORIZED(), "401", unauthorized, map[string]string{"WWW-Authenticate": "'Bearer'"}},
		{"AccessDenied", awsapigateway.ResponseType_ACCESS_DENIED(), "401", unauthorized, map[string]string{"WWW-Authenticate": "'Bearer'"}},
		// A path or method no route has: REST APIs answer 403 "Missing
		// Authentication Token"; the local server answers 404.
		{"NoRoute", awsapigateway.ResponseType_MISSING_AUTHENTICATION_TOKEN(), "404", `{"error":"no such route","code":"not_found"}`, nil},
		{"Throttled", awsapigateway.ResponseType_THROTTLED(), "429", `{"error":"too many requests: slow down and retry","code":"rate_limited"}`, nil},
		{"TooLarge", awsapigateway.ResponseType_REQUEST_TOO_LARGE(), "413", `{"error":"the request is larger than API Gateway accepts (10 MB)","code":"too_large"}`, nil},
		{"QuotaExceeded", awsapigateway.ResponseType_QUOTA_EXCEEDED(), "429", `{"error":"too many requests: slow down and retry","code":"rate_limited"}`, nil},
		{"BadBody", awsapigateway.ResponseType_BAD_REQUEST_BODY(), "400", `{"error":$context.error.messageString,"code":"invalid"}`, nil},
		{"BadParameters", awsapigateway.ResponseType_BAD_REQUEST_PARAMETERS(), "400", `{"error":$context.error.messageString,"code":"invalid"}`, nil},
		{"UnsupportedMediaType", awsapigateway.ResponseType_UNSUPPORTED_MEDIA_TYPE(), "415", `{"error":$context.error.messageString,"code":"unsupported_media_type"}`, nil},
		{"NotFound", awsapigateway.ResponseType_RESOURCE_NOT_FOUND(), "404", `{"error":"no such route","code":"not_found"}`, nil},
		// What is left of API Gateway's own 4xx answers is 403 (a WAF
		// rule, a signature or API key it refused); its 5xx are the
		// function failing or timing out.
		{"Default4xx", awsapigateway.ResponseType_DEFAULT_4XX(), "", `{"error":$context.error.messageString,"code":"forbidden"}`, nil},
		{"Default5xx", awsapigateway.ResponseType_DEFAULT_5XX(), "", `{"error":"internal error","code":"internal"}`, nil},
	}
	for _, r := range responses {
		headers := map[string]*string{"Content-Type": jsii.String("'application/json; charset=utf-8'")}
		for k, v := range r.headers {
			headers[k] = jsii.String(v)
		}
		opts := &awsapigateway.GatewayResponseOptions{
			Type:            r.typ,
			ResponseHeaders: &headers,
			Templates:       &map[string]*string{"application/json": jsii.String(r.body)},
		}
		if r.status != "" {
			opts.StatusCode = jsii.String(r.status)
		}
		api.AddGatewayResponse(jsii.String(r.id), opts)
	}
}
