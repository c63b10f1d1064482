package dynamo_test

import (
	"maps"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// TestTunnelCountOfOlderOwners: an owner whose tunnels were stored before
// the count existed (raw items, no COUNT#TUNNELS), or whose COUNT#TUNNELS
// holds only the n of the store before counter.go counted tunnels, is
// counted by the first create (the shared counter mechanism), and its
// deletes without a count are noted in uncountedDeletes.
func TestTunnelCountOfOlderOwners(t *testing.T) {
	ctx := t.Context()
	s, srv := start(t)
	for _, name := range []string{"a", "b", "c"} {
		if err := s.PutTunnel(ctx, newTunnel("usr_a", name, 1)); err != nil {
			t.Fatal(err)
		}
	}
	// usr_b's and usr_c's tunnels, as the store wrote them before counts.
	for _, owner := range []string{"usr_b", "usr_c"} {
		for _, name := range []string{"a", "b", "c"} {
			item := maps.Clone(rawItem(t, srv, "TUNNELS", "usr_a#"+name))
			item["sk"] = &types.AttributeValueMemberS{Value: owner + "#" + name}
			item["owner"] = &types.AttributeValueMemberS{Value: owner}
			putRaw(t, srv, item)
		}
	}
	count := func(owner string) string {
		t.Helper()
		return attr(rawItem(t, srv, "OWNER#"+owner, "COUNT#TUNNELS"), "count")
	}
	if n := count("usr_a"); n != "N:3" {
		t.Fatalf("usr_a's count: %s, want N:3", n)
	}

	// The first create counts the 3 tunnels there are.
	if err := s.CreateTunnel(ctx, newTunnel("usr_b", "d", 1), 4); err != nil {
		t.Fatal(err)
	}
	if n := count("usr_b"); n != "N:4" {
		t.Errorf("usr_b's count after its first create: %s, want N:4", n)
	}
	if err := s.CreateTunnel(ctx, newTunnel("usr_b", "e", 1), 4); sshdeck.ErrorCode(err) != sshdeck.LimitExceeded {
		t.Errorf("usr_b's 5th tunnel at a limit of 4: %v", err)
	}
	// A delete without a count notes itself, and the first create counts.
	if err := s.DeleteTunnel(ctx, "usr_c", "a", 0); err != nil {
		t.Fatal(err)
	}
	if got := attr(rawItem(t, srv, "OWNER#usr_c", "COUNT#TUNNELS"), "uncountedDeletes"); got != "N:1" {
		t.Errorf("usr_c's uncountedDeletes after a delete without a count: %s, want N:1", got)
	}
	if err := s.CreateTunnel(ctx, newTunnel("usr_c", "d", 1), 3); err != nil {
		t.Errorf("usr_c's 3rd tunnel after a delete: %v", err)
	}
	if err := s.CreateTunnel(ctx, newTunnel("usr_c", "e", 1), 3); sshdeck.ErrorCode(err) != sshdeck.LimitExceeded {
		t.Errorf("usr_c's 4th tunnel at a limit of 3: %v", err)
	}

	// The n of the store before counter.go (one too high, here far too
	// high) is not a count: the owner's tunnels are counted again.
	putRaw(t, srv, map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "OWNER#usr_a"}, "sk": &types.AttributeValueMemberS{Value: "COUNT#TUNNELS"},
		"n": &types.AttributeValueMemberN{Value: "10"}, "sv": &types.AttributeValueMemberN{Value: "2"},
	})
	if err := s.CreateTunnel(ctx, newTunnel("usr_a", "d", 1), 4); err != nil {
		t.Fatalf("create below the limit with an old n too high: %v", err)
	}
	if n := count("usr_a"); n != "N:4" {
		t.Errorf("usr_a's count from an old n: %s, want N:4", n)
	}
	if err := s.CreateTunnel(ctx, newTunnel("usr_a", "e", 1), 4); sshdeck.ErrorCode(err) != sshdeck.LimitExceeded {
		t.Errorf("usr_a's 5th tunnel at a limit of 4: %v", err)
	}
	if err := s.DeleteTunnel(ctx, "usr_a", "d", 0); err != nil {
		t.Fatal(err)
	}
	if n := count("usr_a"); n != "N:3" {
		t.Errorf("usr_a's count after a delete: %s, want N:3", n)
	}
}
