package server

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/archive"
)

// clientAddress is the request's remote IP (without the port).
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// handleLogin exchanges a username and password for a new token. Failed
// attempts are limited per account and per client address (429 with
// Retry-After beyond), and the core bounds bcrypt's concurrency, so logins
// cannot slow the other requests down.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request, c *call) error {
	name, err := c.params.required("username")
	if err != nil {
		return err
	}
	password, err := c.params.required("password")
	if err != nil {
		return err
	}
	now := time.Now()
	keys := []struct {
		key string
		max int
	}{{"user:" + name, s.logins.limit}, {"addr:" + clientAddress(r), 4 * s.logins.limit}}
	for _, k := range keys {
		if blocked, wait := s.logins.blocked(k.key, k.max, now); blocked {
			return &Error{Status: http.StatusTooManyRequests, Code: api.CodeRateLimited,
				Message: fmt.Sprintf("too many failed logins; retry in %s", wait.Round(time.Second)), RetryAfter: int(math.Ceil(wait.Seconds()))}
		}
	}
	u, tok, err := s.core.Login(r.Context(), name, password)
	if errors.Is(err, archive.ErrBadPassword) {
		for _, k := range keys {
			s.logins.add(k.key, now)
		}
		return &Error{Status: http.StatusForbidden, Code: api.CodeUnauthorized, Message: "wrong username or password"}
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.Login{Token: tok, Username: u.Name})
}

// handleRefreshToken issues a new token for the caller and revokes the one
// it used (SpaceSense's /user/refresh_token).
func (s *Server) handleRefreshToken(w http.ResponseWriter, r *http.Request, c *call) error {
	tok, err := s.core.RefreshToken(r.Context(), c.user, c.token)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.Login{Token: tok, Username: c.user.Name})
}

// handleTokensList lists the caller's tokens: ids and times, never secrets.
func (s *Server) handleTokensList(w http.ResponseWriter, r *http.Request, c *call) error {
	toks, err := s.core.Tokens(r.Context(), c.user)
	if err != nil {
		return err
	}
	out := api.TokenList{Tokens: []api.Token{}}
	for _, t := range toks {
		j := api.Token{ID: t.ID, CreatedAt: t.Created.UTC().Format(time.RFC3339), Current: t.ID == c.token.ID}
		if !t.Expires.IsZero() {
			e := t.Expires.UTC().Format(time.RFC3339)
			j.ExpiresAt = &e
		}
		out.Tokens = append(out.Tokens, j)
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleTokensRevoke revokes the caller's token (the one sent; id= another
// of its tokens; all=true every one).
func (s *Server) handleTokensRevoke(w http.ResponseWriter, r *http.Request, c *call) error {
	id := c.token.ID
	if v, ok, err := c.params.str("id"); err != nil {
		return err
	} else if ok && v != "" {
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil || n <= 0 {
			return badRequest("parameter id must be a positive integer, got %q", v)
		}
		id = n
	}
	if all, _, err := c.params.boolean("all"); err != nil {
		return err
	} else if all {
		id = 0
	}
	n, err := s.core.RevokeTokens(r.Context(), c.user, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("token %d not found", id)
	}
	return writeJSON(w, http.StatusOK, api.TokensRevoked{Message: fmt.Sprintf("%d token(s) revoked", n), Revoked: n})
}
