// Package client is a typed Go client of the cropkit HTTP API (see
// server/openapi.json): one method per operation, context first.
//
//	c, err := client.New("http://127.0.0.1:8080", client.WithToken(token))
//	report, err := c.DownloadReport(ctx, client.DownloadRequest{FieldName: "north", Index: "ndvi"})
//
// Errors answered by the server are *APIError values that match ErrNotFound,
// ErrForbidden, ErrBadRequest, ErrUnauthorized, ErrConflict, ErrTooLarge or
// ErrUnavailable with errors.Is.
//
// The wire types are package api's, which the server answers with: the
// types named here are aliases of them (Field is api.Field) or of request
// shapes only the client builds.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cropkit/cropkit/api"
)

// Errors matched (errors.Is) by an *APIError of the corresponding status.
var (
	ErrBadRequest = errors.New("bad request")
	// ErrUnauthorized: a missing, invalid, expired or revoked token (a 403
	// with code "unauthorized", as the spec answers); it also matches
	// ErrForbidden.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: any 403 (no access to an index, an administrator's
	// operation, or ErrUnauthorized).
	ErrForbidden = errors.New("forbidden")
	// ErrRateLimited: too many failed logins (429); retry after APIError.RetryAfter.
	ErrRateLimited = errors.New("rate limited")
	ErrNotFound    = errors.New("not found")
	ErrTooLarge    = errors.New("request too large")
	// ErrConflict: the name is taken (registering a field twice).
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: the server is busy (503); retry after
	// APIError.RetryAfter.
	ErrUnavailable = errors.New("temporarily unavailable")
)

// APIError is an error answer of the server.
type APIError struct {
	StatusCode int
	Code       string // machine code: an api.Code… constant, e.g. api.CodeNotFound
	Message    string
	Body       []byte // the raw answer
	// RetryAfter is the server's Retry-After (503 and 429 answers), 0 when absent.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	return fmt.Sprintf("cropkit: %d %s: %s", e.StatusCode, e.Code, e.Message)
}

// Is matches the sentinel of the error's status.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrBadRequest:
		return e.StatusCode == http.StatusBadRequest
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized || (e.StatusCode == http.StatusForbidden && e.Code == api.CodeUnauthorized)
	case ErrForbidden:
		return e.StatusCode == http.StatusForbidden
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case ErrTooLarge:
		return e.StatusCode == http.StatusRequestEntityTooLarge
	case ErrConflict:
		return e.StatusCode == http.StatusConflict
	case ErrUnavailable:
		return e.StatusCode == http.StatusServiceUnavailable
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests
	}
	return false
}

// Client calls one cropkit server. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	token string
	hc    *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends token as "Authorization: Bearer <token>" on every call.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient uses hc instead of http.DefaultClient.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// New returns a client of the server at baseURL (e.g. "http://127.0.0.1:8080").
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("cropkit client: base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("cropkit client: base URL %q must be http(s)://host[:port]", baseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	c := &Client{base: u, hc: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// request is one call: method POST, path, query parameters, optional body.
type request struct {
	path        string
	query       url.Values
	body        io.Reader
	contentType string
}

// do sends r and returns the successful response (the caller closes its
// body), or an *APIError for an error answer.
func (c *Client) do(ctx context.Context, r request) (*http.Response, error) {
	u := *c.base
	u.Path += r.path
	u.RawQuery = r.query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), r.body)
	if err != nil {
		return nil, fmt.Errorf("cropkit client: %w", err)
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cropkit client: %s: %w", r.path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	apiErr := &APIError{StatusCode: resp.StatusCode, Body: body}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		apiErr.RetryAfter = time.Duration(secs) * time.Second
	}
	var eb api.ErrorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
		apiErr.Code, apiErr.Message = eb.Error.Code, eb.Error.Message
	} else {
		apiErr.Code, apiErr.Message = strings.ToLower(strings.ReplaceAll(http.StatusText(resp.StatusCode), " ", "_")), strings.TrimSpace(string(body))
	}
	return nil, apiErr
}

// call sends r and decodes a JSON answer into out.
func (c *Client) call(ctx context.Context, r request, out any) error {
	resp, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("cropkit client: %s: decode answer: %w", r.path, err)
	}
	return nil
}

// jsonBody is a request with v as its JSON body.
func jsonBody(path string, v any) (request, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return request{}, fmt.Errorf("cropkit client: %s: encode body: %w", path, err)
	}
	return request{path: path, body: bytes.NewReader(b), contentType: "application/json"}, nil
}

// query builds query parameters from name/value pairs, skipping empty values.
func query(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

// LoginResult is the answer of Login.
type LoginResult = api.Login

// Login exchanges a username and password for a new token (no token needed).
func (c *Client) Login(ctx context.Context, username, password string) (LoginResult, error) {
	r, err := jsonBody("/login", map[string]string{"username": username, "password": password})
	if err != nil {
		return LoginResult{}, err
	}
	var out LoginResult
	return out, c.call(ctx, r, &out)
}

// Geometry is a GeoJSON geometry; fields are answered as MultiPolygon.
type Geometry = api.Geometry

// Field is a registered field (with its area, "area (ha)").
type Field = api.Field

// FieldRequest registers or updates a field (api.FieldRequest).
type FieldRequest = api.FieldRequest

// RegisterField registers a new field.
func (c *Client) RegisterField(ctx context.Context, f FieldRequest) (Field, error) {
	r, err := jsonBody("/fields/register", f)
	if err != nil {
		return Field{}, err
	}
	var out api.FieldResult
	return out.Field, c.call(ctx, r, &out)
}

// UpdateField changes a field's geometry (dropping its products), group, labels or indices.
func (c *Client) UpdateField(ctx context.Context, f FieldRequest) (Field, error) {
	r, err := jsonBody("/fields/update", f)
	if err != nil {
		return Field{}, err
	}
	var out api.FieldResult
	return out.Field, c.call(ctx, r, &out)
}

// DeleteField deletes a field and its products.
func (c *Client) DeleteField(ctx context.Context, fieldName string) error {
	return c.call(ctx, request{path: "/fields/delete", query: query("field_name", fieldName)}, nil)
}

// ListFields lists the caller's fields, only those of group when it is not
// empty. "" lists every field: fields without a group cannot be selected
// alone (filter the result on Field.Group == "").
func (c *Client) ListFields(ctx context.Context, group string) ([]Field, error) {
	var out api.FieldList
	return out.Fields, c.call(ctx, request{path: "/fields/list", query: query("group", group)}, &out)
}

// MetadataRecord is a field metadata record (spec §2.2); optional members are pointers.
type MetadataRecord = api.MetadataRecord

// MetadataResult is the answer of RegisterMetadata.
type MetadataResult = api.MetadataRegistered

// RegisterMetadata registers one season of field metadata: the same
// start_date replaces that season, another adds one.
func (c *Client) RegisterMetadata(ctx context.Context, rec MetadataRecord) (MetadataResult, error) {
	r, err := jsonBody("/fields/metadata/register", rec)
	if err != nil {
		return MetadataResult{}, err
	}
	var out MetadataResult
	return out, c.call(ctx, r, &out)
}

// ListMetadata returns a field's seasons by start date.
func (c *Client) ListMetadata(ctx context.Context, fieldName string) ([]MetadataRecord, error) {
	var out api.FieldSeasons
	return out.Seasons, c.call(ctx, request{path: "/fields/metadata/list", query: query("field_name", fieldName)}, &out)
}

// DownloadRequest selects a field's image. Index "" is ndvi; Date "" is the
// latest usable image, else that date or the closest usable one.
type DownloadRequest struct {
	FieldName string
	Index     string
	Date      string // YYYY-MM-DD
	// Sensor chooses among one sensor family's images: "" the index's
	// default (Sentinel-2 for optical indices, Sentinel-1 for radar ones),
	// "landsat", "sentinel-1", a satellite ("sentinel-2a", …) or "any".
	Sensor string
}

// File is a downloaded file.
type File struct {
	Name        string // from Content-Disposition
	ContentType string
	Date        string // X-Image-Date: the date actually served
	Data        []byte
}

func (c *Client) file(ctx context.Context, r request) (File, error) {
	resp, err := c.do(ctx, r)
	if err != nil {
		return File{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return File{}, fmt.Errorf("cropkit client: %s: read answer: %w", r.path, err)
	}
	f := File{ContentType: resp.Header.Get("Content-Type"), Date: resp.Header.Get("X-Image-Date"), Data: data}
	if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil {
		f.Name = params["filename"]
	}
	return f, nil
}

func (d DownloadRequest) path(fileType string) string {
	index := d.Index
	if index == "" {
		index = "ndvi"
	}
	p := "/download/" + url.PathEscape(index)
	if fileType != "" {
		p += "/" + fileType
	}
	return p
}

// DownloadPNG downloads the image rendered with the index colormap.
func (c *Client) DownloadPNG(ctx context.Context, d DownloadRequest) (File, error) {
	return c.file(ctx, request{path: d.path("image"), query: query("field_name", d.FieldName, "date", d.Date, "sensor", d.Sensor)})
}

// DownloadJSON downloads the §2.5 JSON document as bytes.
func (c *Client) DownloadJSON(ctx context.Context, d DownloadRequest) (File, error) {
	return c.file(ctx, request{path: d.path("json"), query: query("field_name", d.FieldName, "date", d.Date, "sensor", d.Sensor)})
}

// DownloadReport downloads the §2.5 JSON document decoded; the date served
// is report.Date (PreviousDate is nil for a field's first image).
func (c *Client) DownloadReport(ctx context.Context, d DownloadRequest) (api.Report, error) {
	f, err := c.DownloadJSON(ctx, d)
	if err != nil {
		return api.Report{}, err
	}
	var rep api.Report
	if err := json.Unmarshal(f.Data, &rep); err != nil {
		return api.Report{}, fmt.Errorf("cropkit client: decode report: %w", err)
	}
	return rep, nil
}

// DownloadZip downloads both files zipped: <field>_<index>_<YYYYMMDD>.png and .json.
func (c *Client) DownloadZip(ctx context.Context, d DownloadRequest) (File, error) {
	return c.file(ctx, request{path: d.path(""), query: query("field_name", d.FieldName, "date", d.Date, "sensor", d.Sensor)})
}

// FileEntry is one date with a usable image.
type FileEntry = api.FileEntry

// FileList is the answer of ListFiles: usable dates per index, and the uploads.
type FileList = api.FileList

// ListFilesRequest selects a field's images; empty members do not filter.
type ListFilesRequest struct {
	FieldName string
	Index     string
	StartDate string
	EndDate   string
	// Sensor chooses among one sensor family's images: "" the index's
	// default (Sentinel-2 for optical indices, Sentinel-1 for radar ones),
	// "landsat", "sentinel-1", a satellite ("sentinel-2a", …) or "any".
	Sensor string
}

// ListFiles lists the dates with a usable image, per index.
func (c *Client) ListFiles(ctx context.Context, l ListFilesRequest) (FileList, error) {
	var out FileList
	return out, c.call(ctx, request{path: "/files/list",
		query: query("field_name", l.FieldName, "index", l.Index, "start_date", l.StartDate, "end_date", l.EndDate, "sensor", l.Sensor)}, &out)
}

// ValueRequest asks the index value at a location.
type ValueRequest struct {
	FieldName string
	Index     string
	Lat, Lon  float64
	Date      string
	// Sensor chooses among one sensor family's images: "" the index's
	// default (Sentinel-2 for optical indices, Sentinel-1 for radar ones),
	// "landsat", "sentinel-1", a satellite ("sentinel-2a", …) or "any".
	Sensor string
}

// Value is the answer of Value.
type Value = api.Value

// Value returns the index value of the pixel holding (Lat, Lon) and the date used.
func (c *Client) Value(ctx context.Context, v ValueRequest) (Value, error) {
	var out Value
	q := query("field_name", v.FieldName, "index", v.Index, "date", v.Date, "sensor", v.Sensor,
		"lat", strconv.FormatFloat(v.Lat, 'g', -1, 64), "lon", strconv.FormatFloat(v.Lon, 'g', -1, 64))
	return out, c.call(ctx, request{path: "/fields/value", query: q}, &out)
}

// Raster downloads the index values as a float32 GeoTIFF (nodata -9999).
func (c *Client) Raster(ctx context.Context, d DownloadRequest) (File, error) {
	index := d.Index
	if index == "" {
		index = "ndvi"
	}
	return c.file(ctx, request{path: "/rasters/get", query: query("field_name", d.FieldName, "index", index, "date", d.Date, "sensor", d.Sensor)})
}

// Index describes an index the caller may use.
type Index = api.Index

// Indices lists the indices the caller may use.
func (c *Client) Indices(ctx context.Context) ([]Index, error) {
	var out api.IndexList
	return out.Indices, c.call(ctx, request{path: "/indices/list"}, &out)
}

// IngestResult is the answer of the ingest operations.
type IngestResult = api.IngestResult

// IngestScene makes the server ingest a scene it can read: a folder on the
// server, a STAC item path or URL (administrators only). date dates a scene
// without one in its metadata or name ("" otherwise).
func (c *Client) IngestScene(ctx context.Context, source, date string) (IngestResult, error) {
	r, err := jsonBody("/scenes/ingest", api.IngestRequest{Source: source, Date: date})
	if err != nil {
		return IngestResult{}, err
	}
	var out IngestResult
	return out, c.call(ctx, r, &out)
}

// UploadScene uploads a scene's band files (keys B02…B12, B8A, SCL or CLM)
// and ingests it (administrators only).
func (c *Client) UploadScene(ctx context.Context, date string, bands map[string]io.Reader) (IngestResult, error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			if date != "" {
				if err := mw.WriteField("date", date); err != nil {
					return err
				}
			}
			for name, rd := range bands {
				w, err := mw.CreateFormFile(name, name+".tif")
				if err != nil {
					return err
				}
				if _, err := io.Copy(w, rd); err != nil {
					return err
				}
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	var out IngestResult
	err := c.call(ctx, request{path: "/scenes/ingest", body: pr, contentType: mw.FormDataContentType()}, &out)
	pr.Close()
	return out, err
}

// HistoryRow is one usable date of a field's index history.
type HistoryRow = api.HistoryRow

// HistoryRequest asks a field's index statistics through time.
type HistoryRequest struct {
	FieldName          string
	Indices            []string // nil: every index of the field
	StartDate, EndDate string   // YYYY-MM-DD, inclusive; "" = open
	// Sensor chooses among one sensor family's images: "" the index's
	// default (Sentinel-2 for optical indices, Sentinel-1 for radar ones),
	// "landsat", "sentinel-1", a satellite ("sentinel-2a", …) or "any".
	Sensor string
}

// History returns, per index, one row per usable date (GET /fields/history).
func (c *Client) History(ctx context.Context, h HistoryRequest) (map[string][]HistoryRow, error) {
	var out api.History
	err := c.call(ctx, request{path: "/fields/history", query: query("field_name", h.FieldName,
		"indices", strings.Join(h.Indices, ","), "start_date", h.StartDate, "end_date", h.EndDate, "sensor", h.Sensor)}, &out)
	return out.Indices, err
}

// HistoryCSV returns the same history as CSV.
func (c *Client) HistoryCSV(ctx context.Context, h HistoryRequest) (File, error) {
	return c.file(ctx, request{path: "/fields/history", query: query("field_name", h.FieldName,
		"indices", strings.Join(h.Indices, ","), "start_date", h.StartDate, "end_date", h.EndDate, "sensor", h.Sensor, "format", "csv")})
}

// BoundaryRequest asks the fields in an area of interest.
type BoundaryRequest struct {
	Geometry           any    // GeoJSON Polygon/MultiPolygon/Feature (EPSG:4326), at most 2,500 ha
	StartDate, EndDate string // YYYY-MM-DD; "" = the last growing season with imagery
	Register           bool
	NamePrefix         string
	MinAreaHa          float64
}

// DetectedFields are the fields detected in an area (a GeoJSON
// FeatureCollection), the imagery dates used and the fields registered.
type DetectedFields = api.Boundaries

// DetectBoundaries detects the fields in an area of interest
// (POST /fields/boundaries/detect), registering them when asked.
func (c *Client) DetectBoundaries(ctx context.Context, b BoundaryRequest) (DetectedFields, error) {
	body := map[string]any{"geometry": b.Geometry, "register": b.Register}
	if b.StartDate != "" {
		body["start_date"] = b.StartDate
	}
	if b.EndDate != "" {
		body["end_date"] = b.EndDate
	}
	if b.NamePrefix != "" {
		body["name_prefix"] = b.NamePrefix
	}
	if b.MinAreaHa > 0 {
		body["min_area_ha"] = b.MinAreaHa
	}
	r, err := jsonBody("/fields/boundaries/detect", body)
	if err != nil {
		return DetectedFields{}, err
	}
	var out DetectedFields
	return out, c.call(ctx, r, &out)
}

// Token describes one of the caller's tokens (never its secret).
type Token = api.Token

// Tokens lists the caller's tokens (GET /tokens/list).
func (c *Client) Tokens(ctx context.Context) ([]Token, error) {
	var out api.TokenList
	return out.Tokens, c.call(ctx, request{path: "/tokens/list"}, &out)
}

// RevokeToken revokes one of the caller's tokens: id 0 the one this client
// sends, all every one (POST /tokens/revoke). It returns how many.
func (c *Client) RevokeToken(ctx context.Context, id int64, all bool) (int, error) {
	q := url.Values{}
	if id > 0 {
		q.Set("id", fmt.Sprint(id))
	}
	if all {
		q.Set("all", "true")
	}
	var out api.TokensRevoked
	return out.Revoked, c.call(ctx, request{path: "/tokens/revoke", query: q}, &out)
}

// RefreshToken issues a new token, revokes the one this client sent and
// makes the client use the new one (POST /user/refresh_token); do not call
// it concurrently with other calls of the same Client.
func (c *Client) RefreshToken(ctx context.Context) (LoginResult, error) {
	var out LoginResult
	if err := c.call(ctx, request{path: "/user/refresh_token"}, &out); err != nil {
		return out, err
	}
	c.token = out.Token
	return out, nil
}

// FieldNameAvailable reports whether the caller has no field of that name
// (GET /fields/check/{field_name}).
func (c *Client) FieldNameAvailable(ctx context.Context, name string) (bool, error) {
	var out api.NameAvailable
	return out.Available, c.call(ctx, request{path: "/fields/check/" + url.PathEscape(name)}, &out)
}
