package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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
		switch strings.ToLower(text) {
		case "true":
			return json.RawMessage("true")
		case "false":
			return json.RawMessage("false")
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
	rec, err := metadata.Decode(bytes.NewReader(body))
	var verr *metadata.ValidationError
	if errors.As(err, &verr) {
		return badRequest("%v", verr)
	}
	if err != nil {
		return err
	}
	f, err := s.store.FieldSummary(r.Context(), c.user.ID, rec.FieldName)
	if errors.Is(err, ErrNotFound) {
		return fieldNotFound(rec.FieldName)
	}
	if err != nil {
		return err
	}
	var (
		replaced bool
		count    int
	)
	err = s.store.UpdateSeasons(r.Context(), f.ID, func(current []Season) ([]Season, error) {
		seasons, err := decodeSeasons(current)
		if err != nil {
			return nil, err
		}
		replaced = seasons.Upsert(rec)
		count = len(seasons)
		return encodeSeasons(seasons)
	})
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

func decodeSeasons(stored []Season) (metadata.Seasons, error) {
	var out metadata.Seasons
	for _, se := range stored {
		var rec metadata.Record
		if err := json.Unmarshal(se.Record, &rec); err != nil {
			return nil, fmt.Errorf("stored season %s: %w", se.StartDate, err)
		}
		out.Upsert(rec)
	}
	return out, nil
}

func encodeSeasons(seasons metadata.Seasons) ([]Season, error) {
	out := make([]Season, 0, len(seasons))
	for _, rec := range seasons {
		b, err := json.Marshal(rec)
		if err != nil {
			return nil, fmt.Errorf("encode season %s: %w", rec.StartDate, err)
		}
		out = append(out, Season{StartDate: rec.StartDate, Record: b})
	}
	return out, nil
}

type metadataListResponse struct {
	FieldName string           `json:"field_name"`
	Seasons   metadata.Seasons `json:"seasons"`
}

// handleMetadataList returns a field's seasons by start date.
func (s *Server) handleMetadataList(w http.ResponseWriter, r *http.Request, c *call) error {
	f, err := s.loadField(r.Context(), c, false)
	if err != nil {
		return err
	}
	stored, err := s.store.Seasons(r.Context(), f.ID)
	if err != nil {
		return err
	}
	seasons, err := decodeSeasons(stored)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, metadataListResponse{FieldName: f.Name, Seasons: seasons})
}
