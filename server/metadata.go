package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/cropkit/cropkit/metadata"
)

type metadataResponse struct {
	Message   string `json:"message"`
	FieldName string `json:"field_name"`
	StartDate string `json:"start_date"`
	Seasons   int    `json:"seasons"`
}

// typedMetadataValue converts the string form of a typed §2.2 key (what a
// query string or a form carries: is_tilled=true, yield_amount=9) to its JSON
// type; anything else, and strings that do not convert, stay as they are
// (metadata.Decode then names the key at fault).
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
	if len(body) > metadata.MaxBodyBytes {
		// Only with a --max-body above metadata's limit: the same answer as
		// any body over its limit.
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge,
			Message: fmt.Sprintf("field metadata: body larger than %d bytes", metadata.MaxBodyBytes)}
	}
	rec, err := metadata.Decode(bytes.NewReader(body))
	var verr *metadata.ValidationError
	if errors.As(err, &verr) {
		return badRequest("%v", verr)
	}
	if err != nil {
		return err
	}
	f, replaced, count, err := s.core.RegisterSeason(r.Context(), c.user, rec)
	if err != nil {
		return err
	}
	verb := "added"
	if replaced {
		verb = "replaced"
	}
	return writeJSON(w, http.StatusCreated, metadataResponse{
		Message:   fmt.Sprintf("metadata registered for field %q: season starting %s %s", f.Name, rec.StartDate, verb),
		FieldName: f.Name, StartDate: rec.StartDate, Seasons: count,
	})
}

type metadataListResponse struct {
	FieldName string           `json:"field_name"`
	Seasons   metadata.Seasons `json:"seasons"`
}

// handleMetadataList returns a field's seasons by start date.
func (s *Server) handleMetadataList(w http.ResponseWriter, r *http.Request, c *call) error {
	name, err := c.params.required("field_name")
	if err != nil {
		return err
	}
	f, seasons, err := s.core.Seasons(r.Context(), c.user, name)
	if err != nil {
		return err
	}
	if seasons == nil {
		seasons = metadata.Seasons{}
	}
	return writeJSON(w, http.StatusOK, metadataListResponse{FieldName: f.Name, Seasons: seasons})
}
