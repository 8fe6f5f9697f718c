package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/archive"
)

// typedMetadataValue converts the string form of a typed §2.2 key (what a
// query string or a form carries: is_tilled=true, yield_amount=9) to its JSON
// type; anything else, and strings that do not convert, stay as they are
// (archive.RegisterSeasonJSON then names the key at fault).
func typedMetadataValue(key string, v json.RawMessage) json.RawMessage {
	var text string
	if json.Unmarshal(v, &text) != nil {
		return v
	}
	text = strings.TrimSpace(text)
	switch key {
	case "is_cover_crop", "is_tilled":
		if b, err := parseBool(text); err == nil {
			return json.RawMessage(strconv.FormatBool(b))
		}
	case "yield_amount":
		var n json.Number
		if text != "" && json.Unmarshal([]byte(text), &n) == nil {
			return json.RawMessage(n.String())
		}
	}
	return v
}

// handleMetadataRegister stores one season of field metadata (§4.2): the
// record's members come from the JSON body (and the query string, as
// strings); the season semantics are metadata.Seasons.Upsert.
func (s *Server) handleMetadataRegister(w http.ResponseWriter, r *http.Request, c *call) error {
	obj := make(map[string]json.RawMessage, len(c.params))
	for k, v := range c.params {
		if k != "token" {
			obj[k] = typedMetadataValue(k, v)
		}
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("metadata body: %w", err)
	}
	if len(body) > archive.MaxSeasonBytes {
		// Only with a --max-body above metadata's limit: the same answer as
		// any body over its limit.
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: api.CodeTooLarge,
			Message: fmt.Sprintf("field metadata: body larger than %d bytes", archive.MaxSeasonBytes)}
	}
	out, err := s.core.RegisterSeasonJSON(r.Context(), c.user, body)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, out)
}

// handleMetadataList returns a field's seasons by start date.
func (s *Server) handleMetadataList(w http.ResponseWriter, r *http.Request, c *call) error {
	name, err := c.params.required("field_name")
	if err != nil {
		return err
	}
	out, err := s.core.SeasonsJSON(r.Context(), c.user, name)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}
