package accounts

import (
	"slices"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// TestChangePassword: the current password proves the change, under the
// lockout of the name; the change ends every other token of the user and
// keeps the calling one.
func TestChangePassword(t *testing.T) {
	f := newFixture(t)
	alice := f.user(t, "alice", pwAlice, false)
	bob := f.user(t, "bob", pwBob, false)
	callerLogin := f.login(t, "alice", pwAlice, "")
	caller := f.caller(t, callerLogin)
	other, err := try(f.svc.Login(t.Context(), LoginRequest{Username: "alice", Password: pwAlice, ClientAddr: "198.51.100.4"}))
	if err != nil {
		t.Fatal(err)
	}
	made, err := try(f.svc.CreateToken(t.Context(), caller, NewToken{Name: "ci"}))
	if err != nil {
		t.Fatal(err)
	}
	bobLogin := f.login(t, "bob", pwBob, "")
	ctx := t.Context()

	wantCode(t, "a short new password", noted(f.svc.ChangePassword(ctx, caller, pwAlice, pwShort)), sshdeck.Invalid)
	wantCode(t, "an empty new password", noted(f.svc.ChangePassword(ctx, caller, pwAlice, "")), sshdeck.Invalid)
	wantCode(t, "the wrong current password", noted(f.svc.ChangePassword(ctx, caller, pwWrong, pwNew)), sshdeck.Forbidden)
	if n := f.failures(t, "alice"); n != 1 {
		t.Fatalf("a wrong current password counted %d failures, want 1", n)
	}
	// Nothing changed: the password, the tokens.
	again := f.login(t, "alice", pwAlice, "")
	for _, id := range []string{callerLogin.ID, other.ID, made.ID} {
		if f.token(t, alice.ID, id).Revoked {
			t.Fatalf("token %s revoked by a refused change", id)
		}
	}

	if err := noted(f.svc.ChangePassword(ctx, caller, pwAlice, pwNew)); err != nil {
		t.Fatal(err)
	}
	_, err = try(f.svc.Login(ctx, LoginRequest{Username: "alice", Password: pwAlice}))
	wantCode(t, "the old password", err, sshdeck.Unauthorized)
	if f.token(t, alice.ID, callerLogin.ID).Revoked {
		t.Fatal("the calling token was revoked")
	}
	for _, id := range []string{other.ID, made.ID, again.ID} {
		if !f.token(t, alice.ID, id).Revoked {
			t.Fatalf("token %s made before the change still works", id)
		}
	}
	if after := f.login(t, "alice", pwNew, ""); f.token(t, alice.ID, after.ID).Revoked {
		t.Fatal("a login after the change is revoked")
	}
	if f.token(t, bob.ID, bobLogin.ID).Revoked {
		t.Fatal("bob's token revoked by alice's change")
	}
}

// TestChangePasswordLockedOut: a locked name cannot change its password,
// even with the right one: a token alone tries no faster than a login.
func TestChangePasswordLockedOut(t *testing.T) {
	f := newFixture(t)
	f.user(t, "alice", pwAlice, false)
	caller := f.caller(t, f.login(t, "alice", pwAlice, ""))
	for range MaxNameFailures {
		wantCode(t, "wrong current", noted(f.svc.ChangePassword(t.Context(), caller, pwWrong, pwNew)), sshdeck.Forbidden)
	}
	wantCode(t, "right current while locked", noted(f.svc.ChangePassword(t.Context(), caller, pwAlice, pwNew)), sshdeck.RateLimited)
	_, err := try(f.svc.Login(t.Context(), LoginRequest{Username: "alice", Password: pwAlice}))
	wantCode(t, "login while locked", err, sshdeck.RateLimited)
	f.clock.Add(FailureWindow)
	f.login(t, "alice", pwAlice, "")
}

// TestPasswordOfUserWithout: a user made without a password (the
// bootstrap admin) gets one from the admin command, or sets one with an
// empty current password.
func TestPasswordOfUserWithout(t *testing.T) {
	f := newFixture(t)
	if _, err := f.admin.AddUser(t.Context(), "root", true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.admin.AddUser(t.Context(), "bob", false); err != nil {
		t.Fatal(err)
	}
	u, err := try(f.svc.SetPassword(t.Context(), "root", pwAdmin))
	if err != nil || u.Name != "root" {
		t.Fatalf("SetPassword = %+v, %v", u, err)
	}
	f.login(t, "root", pwAdmin, "")
	wantCode(t, "SetPassword of nobody", noted2(f.svc.SetPassword(t.Context(), "nobody", pwAdmin)), sshdeck.NotFound)
	wantCode(t, "SetPassword, short", noted2(f.svc.SetPassword(t.Context(), "bob", pwShort)), sshdeck.Invalid)

	bearer, tok, err := f.admin.CreateToken(t.Context(), "bob", "bootstrap", 0)
	if err != nil {
		t.Fatal(err)
	}
	leaks.secret(bearer)
	caller := sshdeck.Principal{UserID: tok.UserID, TokenID: tok.ID, Scopes: tok.Scopes}
	wantCode(t, "a current password bob has not", noted(f.svc.ChangePassword(t.Context(), caller, pwUnused, pwBob)), sshdeck.Forbidden)
	if err := noted(f.svc.ChangePassword(t.Context(), caller, "", pwBob)); err != nil {
		t.Fatal(err)
	}
	f.login(t, "bob", pwBob, "")
	wantCode(t, "an empty current password once there is one", noted(f.svc.ChangePassword(t.Context(), caller, "", pwNew)), sshdeck.Invalid)
}

// TestCreateUser: the password is hashed and works; a taken name is a
// Conflict; a bad password or name leaves no user behind.
func TestCreateUser(t *testing.T) {
	f := newFixture(t)
	v := f.user(t, "alice", pwAlice, false)
	if !v.HasPassword || v.Admin || v.Disabled || v.TOTP || v.ID == "" || !v.CreatedAt.Equal(f.clock.Now()) {
		t.Fatalf("view %+v", v)
	}
	ls, err := f.store.LoginSecrets(t.Context(), v.ID)
	if err != nil || !strings.HasPrefix(ls.PasswordHash, "$argon2id$v=19$") || strings.Contains(ls.PasswordHash, pwAlice) {
		t.Fatalf("stored secrets %v: want an argon2id hash", err)
	}
	f.login(t, "alice", pwAlice, "")

	for _, c := range []struct {
		name string
		req  NewUser
		code sshdeck.Code
	}{
		{"a taken name", NewUser{Username: "alice", Password: pwBob}, sshdeck.Conflict},
		{"a short password", NewUser{Username: "bob", Password: pwShort}, sshdeck.Invalid},
		{"no password", NewUser{Username: "bob"}, sshdeck.Invalid},
		{"a bad name", NewUser{Username: "bob smith", Password: pwBob}, sshdeck.Invalid},
		{"no name", NewUser{Password: pwBob}, sshdeck.Invalid},
	} {
		_, err := try(f.svc.CreateUser(t.Context(), c.req))
		wantCode(t, c.name, err, c.code)
		users, err := f.store.Users(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(users) != 1 || users[0].ID != v.ID {
			t.Fatalf("%s: users %+v, want alice alone", c.name, users)
		}
	}
	// The taken name kept its password.
	f.login(t, "alice", pwAlice, "")
}

// TestUpdateUser: disabling ends every token of the user; an admin cannot
// disable themselves nor withdraw their own flag.
func TestUpdateUser(t *testing.T) {
	f := newFixture(t)
	root := f.user(t, "root", pwAdmin, true)
	alice := f.user(t, "alice", pwAlice, false)
	rootCaller := f.caller(t, f.login(t, "root", pwAdmin, ""))
	aliceCaller := f.caller(t, f.login(t, "alice", pwAlice, ""))
	if _, err := try(f.svc.CreateToken(t.Context(), aliceCaller, NewToken{Name: "ci", TTL: ptr(int64(0))})); err != nil {
		t.Fatal(err)
	}

	v, err := try(f.svc.UpdateUser(t.Context(), rootCaller, alice.ID, UserChange{Disabled: ptr(true)}))
	if err != nil || !v.Disabled || v.Admin || !v.HasPassword {
		t.Fatalf("disable: %+v, %v", v, err)
	}
	for _, tok := range f.tokens(t, alice.ID) {
		if !tok.Revoked {
			t.Fatalf("token %s (%s) of a disabled user not revoked", tok.ID, tok.Name)
		}
	}
	_, err = try(f.svc.Login(t.Context(), LoginRequest{Username: "alice", Password: pwAlice}))
	wantCode(t, "login of a disabled user", err, sshdeck.Unauthorized)
	// Enabled again: no token comes back, login works.
	if v, err = try(f.svc.UpdateUser(t.Context(), rootCaller, alice.ID, UserChange{Disabled: ptr(false), Admin: ptr(true)})); err != nil || v.Disabled || !v.Admin {
		t.Fatalf("enable and grant admin: %+v, %v", v, err)
	}
	for _, tok := range f.tokens(t, alice.ID) {
		if !tok.Revoked {
			t.Fatalf("token %s came back", tok.ID)
		}
	}
	if res := f.login(t, "alice", pwAlice, ""); !slices.Contains(res.Scopes, sshdeck.ScopeAdmin) {
		t.Fatalf("an admin's login scopes %v", res.Scopes)
	}

	for _, c := range []struct {
		name   string
		id     string
		change UserChange
		code   sshdeck.Code
	}{
		{"disable oneself", root.ID, UserChange{Disabled: ptr(true)}, sshdeck.Conflict},
		{"withdraw one's admin flag", root.ID, UserChange{Admin: ptr(false)}, sshdeck.Conflict},
		{"both", root.ID, UserChange{Disabled: ptr(true), Admin: ptr(false)}, sshdeck.Conflict},
		{"an unknown id", "usr_absent", UserChange{Disabled: ptr(true)}, sshdeck.NotFound},
	} {
		_, err := try(f.svc.UpdateUser(t.Context(), rootCaller, c.id, c.change))
		wantCode(t, c.name, err, c.code)
	}
	u, err := f.store.User(t.Context(), root.ID)
	if err != nil || u.Disabled || !u.Admin {
		t.Fatalf("root after refused changes: %+v, %v", u, err)
	}
	for _, tok := range f.tokens(t, root.ID) {
		if tok.Revoked {
			t.Fatal("a refused change revoked root's token")
		}
	}
	// What is no withdrawal is allowed on oneself.
	if v, err := try(f.svc.UpdateUser(t.Context(), rootCaller, root.ID, UserChange{Disabled: ptr(false), Admin: ptr(true)})); err != nil || !v.Admin || v.Disabled {
		t.Fatalf("a no-op change of oneself: %+v, %v", v, err)
	}
}

// TestUsers: the list shows every user with what their secrets say, and
// nothing of the secrets.
func TestUsers(t *testing.T) {
	f := newFixture(t)
	f.user(t, "root", pwAdmin, true)
	f.user(t, "alice", pwAlice, false)
	if _, err := f.admin.AddUser(t.Context(), "nopw", false); err != nil {
		t.Fatal(err)
	}
	f.enableTOTP(t, f.caller(t, f.login(t, "alice", pwAlice, "")))
	list, err := try(f.svc.Users(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	type flags struct{ admin, password, totp bool }
	got := map[string]flags{}
	for _, v := range list {
		got[v.Name] = flags{v.Admin, v.HasPassword, v.TOTP}
	}
	want := map[string]flags{"root": {true, true, false}, "alice": {false, true, true}, "nopw": {false, false, false}}
	if len(got) != len(want) {
		t.Fatalf("users %+v", list)
	}
	for name, w := range want {
		if got[name] != w {
			t.Fatalf("%s: %+v, want %+v", name, got[name], w)
		}
	}
}
