// Package lambdaapp builds the entry point of a route's Lambda function, once
// per container (in main, before lambda.Start): the settings and the App of
// shared/app over DynamoDB and KMS, the route's handler of shared/api, and
// the proxy-event adapter of shared/lambdahttp. Every
// functions/<route>/main.go is one call into it. The authorizer's function
// does not use it (app.Authorizer): it links no handler.
package lambdaapp

import (
	"context"
	"fmt"
	"net/http"

	"github.com/sshdeck/sshdeck/shared/api"
	"github.com/sshdeck/sshdeck/shared/app"
	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/lambdahttp"
	"github.com/sshdeck/sshdeck/shared/routes"
)

// Route builds the entry point of the named route's function, for a route
// whose answer is buffered (not Stream in the route table).
func Route(name string) (*lambdahttp.Handler, error) {
	h, err := handler(name, false)
	if err != nil {
		return nil, err
	}
	return lambdahttp.New(h), nil
}

// StreamRoute builds the entry point of the named route's function, for a
// route whose answer is streamed (Stream in the route table).
func StreamRoute(name string) (*lambdahttp.StreamHandler, error) {
	h, err := handler(name, true)
	if err != nil {
		return nil, err
	}
	return lambdahttp.NewStream(h), nil
}

// handler builds the handler of the named route over the App of the
// environment's settings, once the route table says it streams or not as
// the caller does.
func handler(name string, stream bool) (http.Handler, error) {
	route, ok := routes.ByName(name)
	switch {
	case !ok:
		return nil, fmt.Errorf("no route %q in the route table", name)
	case route.Stream && !stream:
		return nil, fmt.Errorf("route %s streams its answer (Stream in the route table): its entry point is StreamRoute", name)
	case !route.Stream && stream:
		return nil, fmt.Errorf("route %s buffers its answer (not Stream in the route table): its entry point is Route", name)
	}
	return open(route)
}

func open(route routes.Route) (http.Handler, error) {
	name := route.Name
	cfg, err := config.FromEnv()
	if err != nil {
		return nil, err
	}
	if err := app.CheckLambda(cfg, route.Credentials); err != nil {
		return nil, err
	}
	opts := app.Options{Log: app.LambdaLog()}
	if !route.Credentials {
		opts.NoDataKey = fmt.Sprintf("route %s is not marked Credentials in the route table, so its function has no data key", name)
	}
	a, err := app.OpenTable(context.Background(), cfg, opts)
	if err != nil {
		return nil, err
	}
	apiCfg, err := api.FromApp(a)
	if err != nil {
		return nil, err
	}
	return api.New(apiCfg).Handler(name), nil
}
