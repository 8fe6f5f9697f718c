package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/archive"
)

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}

// fieldInput reads the parameters of a registration or an update. SpaceSense's
// client sends geojson (a Feature) for geometry and label, a list mixing
// index names (taken as indices) with free labels (kept as labels with an
// empty value).
func (s *Server) fieldInput(p params, name string) (archive.FieldInput, error) {
	in := archive.FieldInput{Name: name}
	var err error
	for _, key := range []string{"geometry", "geojson"} {
		raw, ok, err := p.object(key)
		if err != nil {
			return in, err
		}
		if ok {
			in.Geometry = raw
			break
		}
	}
	if g, ok, err := p.str("group"); err != nil {
		return in, err
	} else if ok {
		in.Group = &g
	}
	if in.Labels, _, err = p.labels("labels"); err != nil {
		return in, err
	}
	if in.Indices, _, err = p.list("indices"); err != nil {
		return in, err
	}
	mixed, ok, err := p.rawList("label")
	if err != nil || !ok {
		return in, err
	}
	for _, l := range mixed {
		if _, isIndex := s.core.Catalogue().Lookup(strings.ToLower(l)); isIndex {
			in.Indices = append(in.Indices, strings.ToLower(l))
			continue
		}
		if in.Labels == nil {
			in.Labels = map[string]string{}
		}
		in.Labels[l] = ""
	}
	return in, nil
}

func (s *Server) handleFieldRegister(w http.ResponseWriter, r *http.Request, c *call) error {
	return s.writeField(w, r, c, s.core.RegisterField, http.StatusCreated, "registered")
}

// writeField applies the field_name and field parameters with store (the
// core's register or update) and answers the field with status.
func (s *Server) writeField(w http.ResponseWriter, r *http.Request, c *call,
	store func(context.Context, archive.User, archive.FieldInput) (archive.Field, error), status int, done string) error {
	name, err := c.params.required("field_name")
	if err != nil {
		return err
	}
	in, err := s.fieldInput(c.params, name)
	if err != nil {
		return err
	}
	f, err := store(r.Context(), c.user, in)
	if err != nil {
		return err
	}
	fj := f.Wire()
	return writeJSON(w, status, api.FieldResult{Message: fmt.Sprintf("field %q %s", f.Name, done), Field: fj, AreaHa: fj.AreaHa})
}

// field loads the caller's field named by the field_name parameter
// (404 for a missing field and another user's field alike).
func (s *Server) field(ctx context.Context, c *call, withGeometry bool) (archive.Field, error) {
	name, err := c.params.required("field_name")
	if err != nil {
		return archive.Field{}, err
	}
	return s.core.Field(ctx, c.user, name, withGeometry)
}

func (s *Server) handleFieldUpdate(w http.ResponseWriter, r *http.Request, c *call) error {
	return s.writeField(w, r, c, s.core.UpdateField, http.StatusOK, "updated")
}

func (s *Server) handleFieldDelete(w http.ResponseWriter, r *http.Request, c *call) error {
	name, err := c.params.required("field_name")
	if err != nil {
		return err
	}
	if err := s.core.DeleteField(r.Context(), c.user, name); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.Message{Message: fmt.Sprintf("field %q deleted with its products", name)})
}

func (s *Server) handleFieldList(w http.ResponseWriter, r *http.Request, c *call) error {
	group, groupGiven, err := c.params.str("group")
	if err != nil {
		return err
	}
	var g *string
	if groupGiven {
		g = &group
	}
	fields, err := s.core.Fields(r.Context(), c.user, g)
	if err != nil {
		return err
	}
	out := api.FieldList{Fields: make([]api.Field, 0, len(fields))}
	for _, f := range fields {
		out.Fields = append(out.Fields, f.Wire())
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleFieldCheck answers whether a field name is free for the caller
// (SpaceSense's GET /fields/check/{field_name}).
func (s *Server) handleFieldCheck(w http.ResponseWriter, r *http.Request, c *call) error {
	name := r.PathValue("field_name")
	_, err := s.core.Field(r.Context(), c.user, name, false)
	switch {
	case err == nil:
		return writeJSON(w, http.StatusOK, api.NameAvailable{Available: false})
	case isNotFound(err):
		return writeJSON(w, http.StatusOK, api.NameAvailable{Available: true})
	}
	return err
}

// handleIndices lists the indices the caller may use.
func (s *Server) handleIndices(w http.ResponseWriter, r *http.Request, c *call) error {
	out := api.IndexList{Indices: []api.Index{}}
	for _, n := range s.core.IndexNames(c.user) {
		ix, _ := s.core.Catalogue().Lookup(n)
		sensors := make([]string, len(ix.Sensors))
		for i, f := range ix.Sensors {
			sensors[i] = string(f)
		}
		out.Indices = append(out.Indices, api.Index{Name: ix.Name, Formula: ix.Formula, Source: ix.Source, Bands: ix.Bands, Sensors: sensors})
	}
	return writeJSON(w, http.StatusOK, out)
}
