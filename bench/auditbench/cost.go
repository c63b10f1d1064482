package auditbench

import (
	"context"
	"fmt"

	"github.com/sshdeck/sshdeck/bench/report"
	"github.com/sshdeck/sshdeck/internal/dynamotest"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
)

// cost is what one request of a route made of DynamoDB, by mode.
type cost struct {
	Route, Call string
	// Calls are the calls of each operation, as the in-process DynamoDB
	// counted them.
	Calls [2]map[string]int
	// Writes are the write calls with their items, sized.
	Writes [2][]writeCall
}

// Units is the write request units of the request of m.
func (c cost) Units(m mode) int {
	n := 0
	for _, call := range c.Writes[m] {
		for _, it := range call.Items {
			n += it.Units(call.Transactional())
		}
	}
	return n
}

// writeOps are the operations writeRecorder notes.
var writeOps = []string{"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}

// measureCost serves the DynamoDB store over an in-process DynamoDB
// (internal/dynamotest) twice, as measureLatency does the embedded one,
// and sends one request of each route to each server, counting its calls
// and sizing the items it wrote.
func measureCost(ctx context.Context, o report.Options) ([]cost, error) {
	srv, err := dynamotest.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("start the in-process DynamoDB: %w", err)
	}
	defer srv.Close()
	rec := &writeRecorder{API: srv.Client}
	w, err := newWorld(ctx, dynamo.New(rec, srv.Table))
	if err != nil {
		return nil, err
	}
	defer w.close()
	var costs []cost
	for _, r := range routes {
		c := cost{Route: r.Name, Call: r.Call}
		request, err := r.prepare(ctx, w, 1)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Name, err)
		}
		// The token's check is cached from here on (auth.Authenticator),
		// in both servers, which share it: the requests counted make no
		// call of the authorizer's, as behind API Gateway.
		if err := w.warm(ctx); err != nil {
			return nil, err
		}
		for _, m := range modes {
			// An odd i for the audited request: update-host's second
			// body, a change after the first.
			req, err := request(m, 0, int(m))
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", r.Name, m, err)
			}
			srv.ResetCalls()
			rec.take()
			if err := w.send(req.WithContext(ctx), r.Status); err != nil {
				return nil, fmt.Errorf("%s, %s: %w", r.Name, m, err)
			}
			calls, writes := srv.Calls(), rec.take()
			if err := sameWrites(calls, writes); err != nil {
				return nil, fmt.Errorf("%s, %s: %w", r.Name, m, err)
			}
			if err := sizeItems(ctx, srv.Client, srv.Table, writes); err != nil {
				return nil, fmt.Errorf("%s, %s: %w", r.Name, m, err)
			}
			c.Calls[m], c.Writes[m] = calls, writes
		}
		o.Logf("%-26s DynamoDB write units: %d unaudited, %d audited", r.Name, c.Units(off), c.Units(on))
		costs = append(costs, c)
	}
	return costs, nil
}

// sameWrites checks that the recorder saw every write DynamoDB counted:
// the units are computed from the recorder's.
func sameWrites(calls map[string]int, writes []writeCall) error {
	seen := map[string]int{}
	for _, c := range writes {
		seen[c.Op]++
	}
	for _, op := range writeOps {
		if seen[op] != calls[op] {
			return fmt.Errorf("DynamoDB counted %d %s, the store's client made %d: the units would be wrong", calls[op], op, seen[op])
		}
	}
	return nil
}
