package main

import (
	"slices"
	"testing"
)

// TestWAF: by default one regional web ACL allows everything but a client
// (an IP address) past wafRate requests in 5 minutes, which it answers 429
// with the contract's rate_limited body and Retry-After; it guards the REST
// API's stage and the tunnel service's load balancer.
func TestWAF(t *testing.T) {
	s := synthDefault(t)
	aclID, acl := s.only(t, "AWS::WAFv2::WebACL")
	p := acl.Properties
	if p["Scope"] != "REGIONAL" || property(p, "DefaultAction", "Allow") == nil {
		t.Errorf("web ACL %s: scope %v, default action %v; want REGIONAL, Allow", aclID, p["Scope"], render(p["DefaultAction"]))
	}
	rules := list(p["Rules"])
	if len(rules) != 1 {
		t.Fatalf("web ACL %s has %d rules, want the one rate-based rule", aclID, len(rules))
	}
	rate := property(rules[0], "Statement", "RateBasedStatement")
	if property(rate, "AggregateKeyType") != "IP" || property(rate, "Limit") != float64(s.cfg.WAFRate) ||
		property(rate, "EvaluationWindowSec") != float64(300) || s.cfg.WAFRate != 1000 {
		t.Errorf("rate rule %v, want %d requests per IP in 300 s", render(rate), s.cfg.WAFRate)
	}
	block := property(rules[0], "Action", "Block", "CustomResponse")
	if property(block, "ResponseCode") != float64(429) {
		t.Errorf("the rule answers %v, want 429", render(block))
	}
	headers := list(property(block, "ResponseHeaders"))
	if len(headers) != 1 || property(headers[0], "Name") != "Retry-After" {
		t.Errorf("the rule's headers %v, want Retry-After", render(headers))
	}
	bodyKey, _ := property(block, "CustomResponseBodyKey").(string)
	body := property(p, "CustomResponseBodies", bodyKey)
	if property(body, "ContentType") != "APPLICATION_JSON" {
		t.Errorf("the rule's body %v is not JSON", render(body))
	}
	if e, err := errorBody(property(body, "Content")); err != nil || e.Code != "rate_limited" || e.Error == "" {
		t.Errorf("the rule's body %v: %+v %v, want the contract's rate_limited error", render(body), e, err)
	}

	stage, _ := s.only(t, "AWS::ApiGateway::Stage")
	lb, _ := s.only(t, "AWS::ElasticLoadBalancingV2::LoadBalancer")
	var guarded []string
	for _, id := range s.ids("AWS::WAFv2::WebACLAssociation") {
		a := s.Resources[id].Properties
		if att, name := getAtt(a["WebACLArn"]); att != aclID || name != "Arn" {
			t.Errorf("association %s is of %v, want %s", id, render(a["WebACLArn"]), aclID)
		}
		switch {
		case refersTo(a["ResourceArn"], stage):
			guarded = append(guarded, "stage")
		case refersTo(a["ResourceArn"], lb):
			guarded = append(guarded, "load balancer")
		default:
			t.Errorf("association %s guards %v", id, render(a["ResourceArn"]))
		}
	}
	slices.Sort(guarded)
	if !slices.Equal(guarded, []string{"load balancer", "stage"}) {
		t.Errorf("the web ACL guards %v, want the stage and the load balancer", guarded)
	}
}

// TestNoWAF: context waf=false leaves the web ACL and its associations out.
func TestNoWAF(t *testing.T) {
	s := synthHTTPS(t)
	for _, typ := range []string{"AWS::WAFv2::WebACL", "AWS::WAFv2::WebACLAssociation"} {
		if ids := s.ids(typ); len(ids) != 0 {
			t.Errorf("waf=false, yet %s %v", typ, ids)
		}
	}
}
