package server

import (
	"errors"
	"net/http"
)

type loginResponse struct {
	Token    string `json:"token"`
	Username string `json:"username"`
}

// handleLogin exchanges a username and password for a new token.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request, c *call) error {
	name, err := c.params.required("username")
	if err != nil {
		return err
	}
	password, err := c.params.required("password")
	if err != nil {
		return err
	}
	u, err := s.store.CheckPassword(r.Context(), name, password)
	if errors.Is(err, ErrBadPassword) {
		return unauthorized("wrong username or password")
	}
	if err != nil {
		return err
	}
	tok, err := s.store.createToken(r.Context(), u.ID)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, loginResponse{Token: tok, Username: u.Name})
}
