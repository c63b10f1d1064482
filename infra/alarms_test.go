package main

import (
	"slices"
	"testing"
)

// TestAlarmTopic: the alarms' topic is encrypted with a key of its own,
// which CloudWatch may use; it refuses plain HTTP and takes CloudWatch's
// publishes for this account's alarms alone.
func TestAlarmTopic(t *testing.T) {
	s := synthDefault(t)
	topicID, topic := s.only(t, "AWS::SNS::Topic")
	key, _ := getAtt(topic.Properties["KmsMasterKeyId"])
	tableKey, credentialsKey := s.keys(t)
	if s.Resources[key].Type != "AWS::KMS::Key" || key == tableKey || key == credentialsKey {
		t.Fatalf("topic %s is encrypted with %s, want a key of its own", topicID, render(topic.Properties["KmsMasterKeyId"]))
	}
	var cloudwatchMayUse bool
	for _, st := range parseStatements(s.Resources[key].Properties["KeyPolicy"]) {
		if st.Effect == "Allow" && render(st.Principal) == `{"Service":"cloudwatch.amazonaws.com"}` {
			cloudwatchMayUse = slices.Equal(st.Action, []string{"kms:Decrypt", "kms:GenerateDataKey"})
		}
	}
	if !cloudwatchMayUse {
		t.Errorf("key %s: CloudWatch may not Decrypt and GenerateDataKey (its alarms could not publish)", key)
	}
	_, policy := s.only(t, "AWS::SNS::TopicPolicy")
	var tls, alarms bool
	for _, st := range parseStatements(policy.Properties["PolicyDocument"]) {
		switch {
		case st.Effect == "Deny" && property(st.Condition, "Bool", "aws:SecureTransport") == "false":
			tls = true
		case st.Effect == "Allow":
			arn := render(property(st.Condition, "ArnLike", "aws:SourceArn"))
			alarms = slices.Equal(st.Action, []string{"sns:Publish"}) && render(st.Principal) == `{"Service":"cloudwatch.amazonaws.com"}` &&
				render(property(st.Condition, "StringEquals", "aws:SourceAccount")) == "${AWS::AccountId}" &&
				arn == "arn:${AWS::Partition}:cloudwatch:"+s.cfg.Region+":${AWS::AccountId}:alarm:*"
			if !alarms {
				t.Errorf("topic policy allows %v to %s if %s", st.Action, render(st.Principal), render(st.Condition))
			}
		}
	}
	if !tls || !alarms {
		t.Errorf("topic %s: denies plain HTTP %v, takes this account's alarms %v; want both", topicID, tls, alarms)
	}
}
