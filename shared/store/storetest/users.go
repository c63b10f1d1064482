package storetest

import (
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

func newUser(id, name string, admin bool) *sshdeck.User {
	return &sshdeck.User{ID: id, Name: name, Admin: admin, CreatedAt: base.Add(time.Minute)}
}

func sameUser(t *testing.T, got, want *sshdeck.User, what string) {
	t.Helper()
	same(t, got, want, func(u *sshdeck.User) { u.CreatedAt = ms(u.CreatedAt) }, what)
}

func testUserCreateAndGet(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	u := newUser("u-1", "alice", true)
	must(t, s.CreateUser(ctx, u), "CreateUser")
	got, err := s.User(ctx, "u-1")
	must(t, err, "User")
	sameUser(t, got, u, "User")
	got, err = s.UserByName(ctx, "alice")
	must(t, err, "UserByName")
	sameUser(t, got, u, "UserByName")
}

func testUserNameTaken(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	alice := newUser("u-1", "alice", false)
	must(t, s.CreateUser(ctx, alice), "CreateUser")
	wantCode(t, s.CreateUser(ctx, newUser("u-2", "alice", true)), sshdeck.Conflict, "CreateUser with a taken name")
	_, err := s.User(ctx, "u-2")
	wantCode(t, err, sshdeck.NotFound, "User of the refused user")
	got, err := s.UserByName(ctx, "alice")
	must(t, err, "UserByName")
	sameUser(t, got, alice, "UserByName after the refused create")
}

func testUserNotFound(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	_, err := s.User(ctx, "nobody")
	wantCode(t, err, sshdeck.NotFound, "User")
	_, err = s.UserByName(ctx, "nobody")
	wantCode(t, err, sshdeck.NotFound, "UserByName")
	users, err := s.Users(ctx)
	must(t, err, "Users")
	if len(users) != 0 {
		t.Fatalf("Users of an empty store: got %d users", len(users))
	}
}

func testUsersOrderedByName(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	// Ids in the opposite order to names, so ordering by id is caught.
	want := []*sshdeck.User{newUser("u-3", "alice", false), newUser("u-2", "bob", true), newUser("u-1", "carol", false)}
	for _, i := range []int{1, 2, 0} {
		must(t, s.CreateUser(ctx, want[i]), "CreateUser")
	}
	got, err := s.Users(ctx)
	must(t, err, "Users")
	if len(got) != len(want) {
		t.Fatalf("Users: got %d users, want %d", len(got), len(want))
	}
	for i := range want {
		sameUser(t, got[i], want[i], "Users["+want[i].Name+"]")
	}
}

func testUserUpdate(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	alice := newUser("u-1", "alice", false)
	must(t, s.CreateUser(ctx, alice), "CreateUser")
	must(t, s.CreateUser(ctx, newUser("u-2", "bob", false)), "CreateUser")
	yes, no := true, false

	got, err := s.UpdateUser(ctx, "u-1", sshdeck.UserChange{Disabled: &yes})
	must(t, err, "UpdateUser disabled")
	want := *alice
	want.Disabled = true
	sameUser(t, got, &want, "UpdateUser's answer")
	got, err = s.UpdateUser(ctx, "u-1", sshdeck.UserChange{Admin: &yes})
	must(t, err, "UpdateUser admin")
	want.Admin = true
	sameUser(t, got, &want, "UpdateUser of the other flag keeps the first")
	for what, get := range map[string]func() (*sshdeck.User, error){
		"User":       func() (*sshdeck.User, error) { return s.User(ctx, "u-1") },
		"UserByName": func() (*sshdeck.User, error) { return s.UserByName(ctx, "alice") },
		"Users":      func() (*sshdeck.User, error) { us, err := s.Users(ctx); return us[0], err },
	} {
		got, err := get()
		must(t, err, what)
		sameUser(t, got, &want, what+" after UpdateUser")
	}
	got, err = s.UpdateUser(ctx, "u-1", sshdeck.UserChange{Disabled: &no, Admin: &no})
	must(t, err, "UpdateUser back")
	sameUser(t, got, alice, "UpdateUser back")
	got, err = s.UpdateUser(ctx, "u-1", sshdeck.UserChange{})
	must(t, err, "UpdateUser of nothing")
	sameUser(t, got, alice, "UpdateUser of nothing")
	bob, err := s.UserByName(ctx, "bob")
	must(t, err, "UserByName")
	sameUser(t, bob, newUser("u-2", "bob", false), "another user")
	_, err = s.UpdateUser(ctx, "nobody", sshdeck.UserChange{Disabled: &yes})
	wantCode(t, err, sshdeck.NotFound, "UpdateUser of an absent user")
}
