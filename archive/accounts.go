package archive

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/text/unicode/norm"
)

// validName reports whether a user or field name is acceptable: non-empty,
// at most max bytes, no control characters, not only spaces.
func validName(name string, max int) bool {
	if strings.TrimSpace(name) == "" || len(name) > max {
		return false
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// FieldName is the one spelling of a field name, applied wherever a name
// comes in (registration, update, every lookup): surrounding white space
// trimmed and Unicode NFC. Without it "UDS-01 " and "UDS-01", or an NFD and
// an NFC "é", were different fields that look the same.
func FieldName(name string) string {
	return norm.NFC.String(strings.TrimSpace(name))
}

// checkFieldName refuses a (canonical) field name that cannot be a path
// segment of the routes that carry it (/fields/check/{name}): "." and ".."
// (clients and proxies resolve them away). A "/" is allowed ("North 1/2"):
// it travels as %2F within the segment.
func checkFieldName(name string, max int) error {
	switch {
	case !validName(name, max):
		return Invalid("field_name must be 1 to %d bytes without control characters", max)
	case name == "." || name == "..":
		return Invalid("field_name %q is not a name: . and .. are refused", name)
	}
	return nil
}

// CreateUser adds an account (ErrExists when the name is taken). Unknown
// indices are refused.
func (a *Archive) CreateUser(ctx context.Context, u NewUser) (User, error) {
	if !validName(u.Name, a.limits.NameBytes) {
		return User{}, Invalid("invalid user name %q: 1 to %d bytes without control characters", u.Name, a.limits.NameBytes)
	}
	for _, n := range u.Indices {
		if _, ok := a.cat.Lookup(n); !ok {
			return User{}, Invalid("unknown index %q (known: %s)", n, strings.Join(a.cat.Names(), ","))
		}
	}
	var hash string
	if u.Password != "" {
		if len(u.Password) > 72 {
			return User{}, Invalid("password longer than 72 bytes")
		}
		h, err := bcrypt.GenerateFromPassword([]byte(u.Password), bcrypt.DefaultCost)
		if err != nil {
			return User{}, fmt.Errorf("create user %s: hash password: %w", u.Name, err)
		}
		hash = string(h)
	}
	return a.store.CreateUser(ctx, u, hash)
}

// UserByName returns the account called name.
func (a *Archive) UserByName(ctx context.Context, name string) (User, error) {
	return a.store.UserByName(ctx, name)
}

// dummyHash is a bcrypt hash of a random password, compared against when the
// user does not exist, so user names cannot be probed by timing.
const dummyHash = "$2a$10$BhPxA30rvlkj51Eqe5KaSeoWCawS57gYeUtnZjoXU9XY3DqiNcNaO"

// CheckPassword returns the account when password is its password, else
// ErrBadPassword (also for unknown users and token-only accounts). bcrypt
// runs in a bounded number of slots: a flood of logins waits (ErrBusy past
// ctx) instead of taking every core.
func (a *Archive) CheckPassword(ctx context.Context, name, password string) (User, error) {
	select {
	case a.logins <- struct{}{}:
		defer func() { <-a.logins }()
	case <-ctx.Done():
		return User{}, &Error{Kind: ErrBusy, Msg: "too many logins at once; retry shortly", RetryAfter: 1}
	}
	u, hash, err := a.store.PasswordHash(ctx, name)
	if errors.Is(err, ErrNotFound) || (err == nil && hash == "") {
		bcrypt.CompareHashAndPassword([]byte(dummyHash), []byte(password))
		return User{}, ErrBadPassword
	}
	if err != nil {
		return User{}, err
	}
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) != nil {
		return User{}, ErrBadPassword
	}
	return u, nil
}

// Login checks a password and issues a new token.
func (a *Archive) Login(ctx context.Context, name, password string) (User, string, error) {
	u, err := a.CheckPassword(ctx, name, password)
	if err != nil {
		return User{}, "", err
	}
	tok, err := a.issueToken(ctx, u.ID)
	return u, tok, err
}

// tokenHash is how tokens are stored: SHA-256 hex (tokens carry 256 random
// bits, so a fast hash is enough; the database never holds a usable token).
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func (a *Archive) issueToken(ctx context.Context, userID int64) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("new token: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	created := time.Now()
	var expires time.Time
	if a.tokenTTL > 0 {
		expires = created.Add(a.tokenTTL)
	}
	if _, err := a.store.InsertToken(ctx, userID, tokenHash(tok), created, expires); err != nil {
		return "", err
	}
	return tok, nil
}

// CreateToken issues a new token for the account called name; the token is
// returned once and only its hash is stored.
func (a *Archive) CreateToken(ctx context.Context, name string) (string, error) {
	u, err := a.store.UserByName(ctx, name)
	if err != nil {
		return "", fmt.Errorf("create token: %w", err)
	}
	return a.issueToken(ctx, u.ID)
}

// Authenticate returns the account of a token and the token's record;
// ErrUnauthenticated for an unknown, expired or revoked token.
func (a *Archive) Authenticate(ctx context.Context, token string) (User, Token, error) {
	if token == "" {
		return User{}, Token{}, errorf(ErrUnauthenticated, "missing token: send Authorization: Bearer <token> or the token parameter")
	}
	u, t, err := a.userByToken(ctx, sha256.Sum256([]byte(token)), time.Now())
	if errors.Is(err, ErrNotFound) {
		return User{}, Token{}, errorf(ErrUnauthenticated, "invalid, expired or revoked token")
	}
	return u, t, err
}

// RefreshToken issues a new token for u and revokes t, the one it used (so a leaked token stops working once its holder refreshes).
func (a *Archive) RefreshToken(ctx context.Context, u User, t Token) (string, error) {
	fresh, err := a.issueToken(ctx, u.ID)
	if err != nil {
		return "", err
	}
	if _, err := a.store.RevokeTokens(ctx, u.ID, t.ID); err != nil {
		return "", err
	}
	a.changed(ctx, true, false)
	return fresh, nil
}

// Tokens lists the account's tokens (ids and times, never secrets).
func (a *Archive) Tokens(ctx context.Context, u User) ([]Token, error) {
	return a.store.Tokens(ctx, u.ID)
}

// RevokeTokens revokes token id of the account (0: every token) and returns how many.
func (a *Archive) RevokeTokens(ctx context.Context, u User, id int64) (int, error) {
	n, err := a.store.RevokeTokens(ctx, u.ID, id)
	if err == nil && n > 0 {
		a.changed(ctx, true, false)
	}
	return n, err
}

// EnsureAdmin creates the account "admin" with a fresh token when the
// archive has no account yet. created is false (and token empty) otherwise.
func (a *Archive) EnsureAdmin(ctx context.Context) (token string, created bool, err error) {
	n, err := a.store.CountUsers(ctx)
	if err != nil || n > 0 {
		return "", false, err
	}
	u, err := a.store.CreateUser(ctx, NewUser{Name: "admin", Admin: true}, "")
	if errors.Is(err, ErrExists) {
		return "", false, nil // another process won the race
	}
	if err != nil {
		return "", false, err
	}
	tok, err := a.issueToken(ctx, u.ID)
	if err != nil {
		return "", false, err
	}
	return tok, true, nil
}
